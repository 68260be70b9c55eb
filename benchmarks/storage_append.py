"""Append throughput of PartitionLog: 1 KiB records in 16 KiB batches, flushing every 1 MiB vs never, each next
to a raw-file write (and fsync at the same points) of the same bytes in the same run.

    PYTHONPATH=src .venv/bin/python benchmarks/storage_append.py [--mib 64] [--simulate-page-cache]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import structlog

from minikafka.common.record_batch import Record, build_batch
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

RECORD_BYTES = 1024
RECORDS_PER_BATCH = 16
MIB = 1 << 20


def run_log(directory: Path, batch: bytes, batches: int, flush_every: int | None, simulate: bool) -> float:
    config = LogConfig(segment_bytes=256 * MIB, simulate_page_cache=simulate)
    log = PartitionLog.open(directory, config, 0)
    since_flush = 0
    start = time.perf_counter()
    for i in range(batches):
        log.append_as_leader(batch, 1, i)
        since_flush += len(batch)
        if flush_every is not None and since_flush >= flush_every:
            log.flush(i)
            since_flush = 0
    if flush_every is not None:
        log.flush(batches)
    elapsed = time.perf_counter() - start
    log.abandon()
    return elapsed


def run_raw(path: Path, batch: bytes, batches: int, flush_every: int | None) -> float:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    since_flush = 0
    start = time.perf_counter()
    for _ in range(batches):
        os.write(fd, batch)
        since_flush += len(batch)
        if flush_every is not None and since_flush >= flush_every:
            os.fsync(fd)
            since_flush = 0
    if flush_every is not None:
        os.fsync(fd)
    elapsed = time.perf_counter() - start
    os.close(fd)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mib", type=int, default=64, help="bytes to append per run, in MiB")
    parser.add_argument("--simulate-page-cache", action="store_true")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))  # keep per-roll debug lines out
    batch = build_batch([Record(os.urandom(RECORD_BYTES)) for _ in range(RECORDS_PER_BATCH)])
    batches = args.mib * MIB // len(batch)
    total_mib = batches * len(batch) / MIB
    print(
        f"{batches} batches of {len(batch)} bytes ({RECORDS_PER_BATCH} x {RECORD_BYTES} B records), "
        f"{total_mib:.1f} MiB per run, simulate_page_cache={args.simulate_page_cache}"
    )
    print(f"{'flush':<14}{'log MB/s':>10}{'raw MB/s':>10}{'log/raw':>9}")
    for label, flush_every in (("every 1 MiB", MIB), ("never", None)):
        with tempfile.TemporaryDirectory(dir=".") as directory:
            log_seconds = run_log(Path(directory) / "bench-0", batch, batches, flush_every, args.simulate_page_cache)
            raw_seconds = run_raw(Path(directory) / "raw.bin", batch, batches, flush_every)
        log_rate = total_mib * MIB / 1e6 / log_seconds
        raw_rate = total_mib * MIB / 1e6 / raw_seconds
        print(f"{label:<14}{log_rate:>10.1f}{raw_rate:>10.1f}{log_rate / raw_rate:>9.2f}")


if __name__ == "__main__":
    main()
