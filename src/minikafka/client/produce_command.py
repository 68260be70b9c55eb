"""`minikafka produce`: records from stdin or generated, with an optional history of every outcome."""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

from minikafka.client.in_flight import InFlight
from minikafka.client.producer import (
    DeliveryFailed,
    Producer,
    ProducerConfig,
    RecordMetadata,
    RetryNotice,
    delivery_outcome,
)
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.errors import ErrorCode
from minikafka.common.tls import TlsFiles


@dataclass(frozen=True)
class ProduceOptions:
    topic: str
    acks: int
    partition: int | None = None
    num_records: int | None = None  # None: read lines from stdin
    record_size: int = 100
    history: Path | None = None
    linger_ms: int = 5
    batch_size: int = 16384
    request_timeout_ms: int = 30000
    delivery_timeout_ms: int = 120000
    max_block_ms: int = 60000
    max_in_flight: int = 1
    enable_idempotence: bool | None = None  # None: Kafka's default
    value_prefix: str = ""
    progress: bool = False
    key_count: int | None = None  # generated records get keys key-0 .. key-(N-1) in turn

    def producer_config(self) -> ProducerConfig:
        """The producer's config; raises INVALID_CONFIG naming the Kafka key of an option out of range."""
        return ProducerConfig(
            acks=self.acks,
            linger_ms=self.linger_ms,
            batch_size=self.batch_size,
            request_timeout_ms=self.request_timeout_ms,
            delivery_timeout_ms=self.delivery_timeout_ms,
            max_block_ms=self.max_block_ms,
            max_in_flight_requests_per_connection=self.max_in_flight,
            enable_idempotence=self.enable_idempotence,
        )


@dataclass
class ProduceSummary:
    sent: int = 0
    acknowledged: int = 0
    failed: int = 0
    elapsed_s: float = 0.0
    errors: Counter[str] = field(default_factory=Counter)  # failed records by Kafka error name

    def line(self) -> str:
        """E.g. `produced 0 of 2 records (2 failed: MESSAGE_TOO_LARGE 2) in 0.1s`."""
        failures = f"{self.failed} failed"
        if self.errors:
            failures += ": " + ", ".join(f"{name} {count}" for name, count in self.errors.most_common())
        return f"produced {self.acknowledged} of {self.sent} records ({failures}) in {self.elapsed_s:.1f}s"


class RetryReporter:
    """Says once per error name what the producer keeps retrying, so a stalled run is not silent."""

    def __init__(self, delivery_timeout_ms: int, out: IO[str]) -> None:
        self.delivery_timeout_ms = delivery_timeout_ms
        self.out = out
        self.seen: set[ErrorCode] = set()

    def __call__(self, notice: RetryNotice) -> None:
        if notice.code in self.seen:
            return
        self.seen.add(notice.code)
        detail = f" ({notice.message})" if notice.message else ""
        print(
            f"retrying {notice.topic}-{notice.partition}: {notice.code.name}{detail}; "
            f"records fail after delivery.timeout.ms {self.delivery_timeout_ms}",
            file=self.out,
        )


def generated_value(prefix: str, index: int, size: int) -> bytes:
    """A unique value `<prefix>-<index>` padded to `size` bytes, so the analysis can match it exactly."""
    text = f"{prefix}-{index:09d}"
    return (text + "." * max(0, size - len(text))).encode()


def history_line(
    topic: str,
    partition: int | None,
    metadata: RecordMetadata | None,
    value: bytes,
    acks: int,
    failure: DeliveryFailed | None,
    latency_ms: float,
    idempotent: bool = False,
    key: bytes | None = None,
    principal: str | None = None,
    refused_by_acls: bool = False,
) -> str:
    """The history line (docs/events.md): ts, topic, partition, offset, value, acks, error, latency_ms, idempotent
    (the producer had enable.idempotence on: a value it sent may be written once only), `key` for a keyed record
    and `principal` for a producer logged in as one (`refused_by_acls` when the run's ACLs refuse its writes); a
    failed line also says whether the failure is `definite` (the record certainly was not written)."""
    line = {
        "ts": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "topic": topic,
        "partition": metadata.partition if metadata else partition,
        "offset": metadata.offset if metadata else None,
        "value": value.decode("utf-8", "replace"),
        "acks": "all" if acks == -1 else str(acks),
        "error": failure.code.name if failure else None,
        "latency_ms": round(latency_ms, 3),
        "idempotent": idempotent,
    }
    if key is not None:  # keyed records only: the compaction check needs each record's key
        line["key"] = key.decode("utf-8", "replace")
    if principal is not None:  # the authenticated producer's (chaos --acls): whose writes the ACLs decide
        line["principal"] = principal
    if refused_by_acls:  # the harness made ACLs that refuse this producer: none of its records may show up
        line["refused_by_acls"] = True
    if failure is not None:
        line["definite"] = failure.definite
    return json.dumps(line, separators=(",", ":"))


async def _values(options: ProduceOptions) -> AsyncIterator[tuple[bytes | None, bytes]]:
    """(key, value) of each record to send."""
    if options.num_records is not None:
        prefix = options.value_prefix or uuid.uuid4().hex[:8]
        for index in range(options.num_records):
            key = None if options.key_count is None else f"key-{index % options.key_count}".encode()
            yield key, generated_value(prefix, index, options.record_size)
        return
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.buffer.readline)
        if not line:
            return
        yield None, line.rstrip(b"\n")


async def run_produce(
    bootstrap: list[str], options: ProduceOptions, tls: TlsFiles | None = None, sasl: SaslLogin | None = None
) -> ProduceSummary:
    config = options.producer_config()
    producer = Producer(
        bootstrap, config, on_retry=RetryReporter(config.delivery_timeout_ms, sys.stderr), tls=tls, sasl=sasl
    )
    summary = ProduceSummary()
    history: IO[str] | None = options.history.open("a", encoding="utf-8") if options.history else None
    started = time.monotonic()
    in_flight = InFlight(10000)  # bounds memory: sending waits for the oldest acknowledgements
    progress = asyncio.create_task(_progress(summary, started)) if options.progress else None

    async def track(key: bytes | None, value: bytes, sent_at: float, future: asyncio.Future[RecordMetadata]) -> None:
        metadata, failure = await delivery_outcome(future)
        if failure is None:
            summary.acknowledged += 1
        else:
            summary.failed += 1
            summary.errors[failure.code.name] += 1
        if history is not None:
            latency = (time.monotonic() - sent_at) * 1000
            history.write(
                history_line(
                    options.topic,
                    options.partition,
                    metadata,
                    value,
                    options.acks,
                    failure,
                    latency,
                    config.idempotent,
                    key,
                )
                + "\n"
            )

    try:
        async for key, value in _values(options):
            await in_flight.acquire()
            sent_at = time.monotonic()
            future = await producer.send(options.topic, value, key=key, partition=options.partition)
            summary.sent += 1
            in_flight.track(asyncio.ensure_future(track(key, value, sent_at, future)))
        await producer.flush()
        await in_flight.drain()
    finally:
        await producer.close()
        if progress is not None:
            progress.cancel()
        if history is not None:
            history.close()
    summary.elapsed_s = time.monotonic() - started
    return summary


async def _progress(summary: ProduceSummary, started: float) -> None:
    while True:
        await asyncio.sleep(1.0)
        elapsed = time.monotonic() - started
        print(
            f"{elapsed:6.1f}s sent {summary.sent} acked {summary.acknowledged} errors {summary.failed} "
            f"({summary.acknowledged / elapsed:.0f} records/s)",
            file=sys.stderr,
        )
