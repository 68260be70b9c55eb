"""`minikafka perf consume`: Kafka's consumer-perf-test. Reads `num_records` records from the beginning of every
partition of a topic and reports MB, MB/s, records and records/s."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from minikafka.client.consumer import EARLIEST, Consumer, ConsumerConfig

MIB = 1024 * 1024


@dataclass(frozen=True)
class PerfConsumeOptions:
    topic: str
    num_records: int
    timeout_ms: int = 10000  # give up after this long without a record


async def run_perf_consume(bootstrap: list[str], options: PerfConsumeOptions) -> dict[str, Any]:
    consumer = Consumer(bootstrap, ConsumerConfig())
    await consumer.assign(options.topic, None, EARLIEST)
    records = size = 0
    started = last_record = time.monotonic()
    while records < options.num_records and (time.monotonic() - last_record) * 1000 < options.timeout_ms:
        batch = await consumer.poll()
        if batch:
            last_record = time.monotonic()
        records += len(batch)
        size += sum(len(r.value or b"") + len(r.key or b"") for r in batch)
    elapsed = time.monotonic() - started
    await consumer.close()
    mb = size / MIB
    return {
        "records": records,
        "mb": round(mb, 3),
        "elapsed_s": round(elapsed, 3),
        "mb_per_s": round(mb / elapsed, 3) if elapsed > 0 else 0.0,
        "records_per_s": round(records / elapsed, 1) if elapsed > 0 else 0.0,
        "timed_out": records < options.num_records,
        "line": (
            f"data.consumed.in.MB {mb:.4f}, MB.sec {mb / elapsed if elapsed else 0:.4f}, data.consumed.in.nMsg "
            f"{records}, nMsg.sec {records / elapsed if elapsed else 0:.4f}, elapsed.sec {elapsed:.3f}"
        ),
    }
