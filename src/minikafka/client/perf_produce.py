"""`minikafka perf produce`: Kafka's producer-perf-test. Sends `num_records` records of `record_size` bytes,
optionally capped at `throughput` records/s, and reports records/s, MB/s and latency percentiles (send to
acknowledgement)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from functools import partial
from typing import IO, Any

from minikafka.client.in_flight import InFlight
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig
from minikafka.common.latency_stats import LatencyStats

MIB = 1024 * 1024
REPORT_INTERVAL_S = 5.0


@dataclass(frozen=True)
class PerfProduceOptions:
    topic: str
    num_records: int
    record_size: int = 1024
    throughput: int = -1  # records/s cap; -1: none
    producer: ProducerConfig = field(default_factory=ProducerConfig)
    max_outstanding: int = 10000  # records awaiting their acknowledgement before send waits


def throttle_delay_s(sent: int, elapsed_s: float, throughput: int) -> float:
    """How long to wait before sending record number `sent` to stay at `throughput` records/s (-1: never)."""
    if throughput <= 0:
        return 0.0
    return max(0.0, sent / throughput - elapsed_s)


def report_line(records: int, elapsed_s: float, record_size: int, stats: dict[str, Any]) -> str:
    """Kafka's summary line: records, records/sec (MB/sec), avg and max latency, then the percentiles."""
    rate = records / elapsed_s if elapsed_s > 0 else 0.0

    def ms(key: str) -> str:
        return "n/a" if stats.get(key) is None else f"{stats[key]:.0f}"

    avg = "n/a" if stats.get("avg_ms") is None else f"{stats['avg_ms']:.2f}"
    head = f"{records} records sent, {rate:.1f} records/sec ({rate * record_size / MIB:.2f} MB/sec)"
    tail = f"{ms('p50_ms')} ms 50th, {ms('p95_ms')} ms 95th, {ms('p99_ms')} ms 99th, {ms('p999_ms')} ms 99.9th."
    return f"{head}, {avg} ms avg latency, {ms('max_ms')} ms max latency, {tail}"


async def run_perf_produce(
    bootstrap: list[str], options: PerfProduceOptions, progress: IO[str] | None = sys.stderr
) -> dict[str, Any]:
    producer = Producer(bootstrap, options.producer)
    payload = os.urandom(options.record_size)  # one random payload, as Kafka's tool does without a payload file
    stats = LatencyStats()
    failed: dict[str, int] = {}
    in_flight = InFlight(options.max_outstanding)
    window = {"start": time.monotonic(), "records": 0, "latency_sum": 0.0, "max": 0.0}

    def completed(sent_at: float, future: asyncio.Future) -> None:
        if future.cancelled():
            return
        error = future.exception()
        if isinstance(error, DeliveryFailed):
            failed[error.code.name] = failed.get(error.code.name, 0) + 1
            return
        latency_ms = (time.monotonic() - sent_at) * 1000
        stats.record(latency_ms)
        window["records"] += 1
        window["latency_sum"] += latency_ms
        window["max"] = max(window["max"], latency_ms)

    started = time.monotonic()
    throttled = options.throughput > 0
    for sent in range(options.num_records):
        if throttled and (delay := throttle_delay_s(sent, time.monotonic() - started, options.throughput)) > 0:
            await asyncio.sleep(delay)
        await in_flight.acquire()
        sent_at = time.monotonic()
        future = await producer.send(options.topic, payload)
        in_flight.track(future, partial(completed, sent_at))
        now = time.monotonic()
        if progress is not None and now - window["start"] >= REPORT_INTERVAL_S:
            _report_window(progress, window, now, options.record_size)
    await producer.flush()
    await in_flight.drain()
    elapsed = time.monotonic() - started
    await producer.close()
    summary = stats.summary()
    acknowledged = int(summary["count"] or 0)
    result: dict[str, Any] = {
        "records": options.num_records,
        "acknowledged": acknowledged,
        "failed": failed,
        "elapsed_s": round(elapsed, 3),
        "records_per_s": round(acknowledged / elapsed, 1) if elapsed > 0 else 0.0,
        "mb_per_s": round(acknowledged * options.record_size / MIB / elapsed, 3) if elapsed > 0 else 0.0,
        "record_size": options.record_size,
        "acks": "all" if options.producer.acks == -1 else str(options.producer.acks),
        **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in summary.items() if k != "count"},
    }
    result["line"] = report_line(acknowledged, elapsed, options.record_size, summary)
    return result


def _report_window(progress: IO[str], window: dict[str, float], now: float, record_size: int) -> None:
    records = int(window["records"])
    elapsed = now - window["start"]
    avg = window["latency_sum"] / records if records else 0.0
    rate = records / elapsed if elapsed > 0 else 0.0
    progress.write(
        f"{records} records sent, {rate:.1f} records/sec ({rate * record_size / MIB:.2f} MB/sec), "
        f"{avg:.1f} ms avg latency, {window['max']:.1f} ms max latency.\n"
    )
    window.update(start=now, records=0, latency_sum=0.0, max=0.0)
