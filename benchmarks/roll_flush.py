"""How long the event loop stalls when a segment rolls: the rolled segment's fsync on the loop vs in a worker thread.

    .venv/bin/python benchmarks/roll_flush.py [--rounds 2] [--total-mib 1536] [--segment-mib 512]

Appends 15-record batches of 1 KiB records to one partition log of the broker's LogManager (real files, the page
cache as it is), letting the loop turn every 64 appends as a broker's does between requests, first with rolled
segments flushed at once, then in a worker thread (the broker's setting), in turns. Prints the longest append call
(a roll's fsync lands in one), the 99.99th percentile and the append rate. The files go under `--dir` (default: the
current directory): on a tmpfs every fsync would be free.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import structlog

from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.common.record_batch import Record, build_batch
from minikafka.storage.log_config import LogConfig

MIB = 1024 * 1024


async def appends(directory: Path, in_background: bool, total_mib: int, segment_mib: int) -> dict[str, Any]:
    manager = LogManager(directory, lambda _topic: LogConfig(segment_bytes=segment_mib * MIB), in_background)
    log = manager.get_or_create(TopicPartition("roll", 0), uuid.uuid4(), 0)
    batch = build_batch([Record(os.urandom(1024))] * 15)
    took: list[float] = []
    started = time.perf_counter()
    while log.size_bytes < total_mib * MIB:
        before = time.perf_counter()
        log.append_as_leader(batch, 1, 0)
        took.append(time.perf_counter() - before)
        if len(took) % 64 == 0:
            await asyncio.sleep(0)
    elapsed = time.perf_counter() - started
    rolls = len(log.segments) - 1
    while log.recovery_point < log.segments[-1].base_offset:  # the last background flush
        await asyncio.sleep(0.01)
    manager.close_all(0)
    took.sort()
    return {
        "rolled_segment_flush": "worker thread" if in_background else "event loop",
        "rolls": rolls,
        "appends": len(took),
        "max_ms": round(took[-1] * 1000, 1),
        "p9999_ms": round(took[int(len(took) * 0.9999)] * 1000, 2),
        "mb_per_s": round(total_mib / elapsed, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--total-mib", type=int, default=1536)
    parser.add_argument("--segment-mib", type=int, default=512)
    parser.add_argument("--dir", default=".", help="where the temporary log goes")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    for _ in range(args.rounds):
        for in_background in (False, True):
            directory = Path(tempfile.mkdtemp(prefix="roll-flush-", dir=args.dir))
            try:
                print(asyncio.run(appends(directory, in_background, args.total_mib, args.segment_mib)), flush=True)
            finally:
                shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()
