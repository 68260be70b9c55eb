"""The periodic HWM checkpoint is written in a worker thread: the event loop keeps running while a checkpoint's
fsyncs are slow (as under kernel writeback), a partition whose HWM did not move is not rewritten, and nothing is
written once its log is closed (close waits for a write in progress and writes the last value itself)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path

import pytest

from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.common.record_batch import Record, build_batch
from minikafka.storage import checkpoint
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import HIGH_WATERMARK_FILE

TOPIC_ID = uuid.uuid4()


def hwm_file(manager: LogManager, partition: int) -> int | None:
    entries = checkpoint.read_entries(manager.log_dir / f"orders-{partition}" / HIGH_WATERMARK_FILE, 2)
    return None if entries is None else int(entries[0][1])


async def test_checkpoints_are_written_off_the_loop_only_when_moved_and_never_after_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = LogManager(tmp_path, lambda topic: LogConfig())
    logs = [manager.get_or_create(TopicPartition("orders", p), TOPIC_ID, 0) for p in (0, 1)]
    for log in logs:
        log.append_as_leader(build_batch([Record(b"v")] * 3), 1, 0)
    logs[0].high_watermark = 3

    writes: list[str] = []
    release = threading.Event()
    real_write = checkpoint.write_atomically

    def slow_write(path: Path, content: str | bytes, sync: bool = True) -> None:
        writes.append(path.parent.name)
        assert threading.current_thread() is not threading.main_thread()
        release.wait(10)  # an fsync stuck behind writeback
        real_write(path, content, sync)

    monkeypatch.setattr(checkpoint, "write_atomically", slow_write)
    writing = asyncio.ensure_future(manager.checkpoint_high_watermarks())
    ticks = 0
    while not writes and ticks < 10000:  # the loop keeps turning while the worker is stuck in the write
        await asyncio.sleep(0)
        ticks += 1
    assert writes == ["orders-0"] and not writing.done()
    release.set()
    await asyncio.wait_for(writing, 10)
    assert writes == ["orders-0"]  # orders-1's HWM is still 0, as its (absent) checkpoint says
    assert hwm_file(manager, 0) == 3 and hwm_file(manager, 1) is None

    await manager.checkpoint_high_watermarks()
    assert writes == ["orders-0"]  # nothing moved: nothing rewritten

    monkeypatch.setattr(checkpoint, "write_atomically", real_write)
    logs[1].high_watermark = 2
    manager.close_all(0)  # writes every last value itself
    assert hwm_file(manager, 0) == 3 and hwm_file(manager, 1) == 2
    logs[1].checkpoint_high_watermark(1)  # a worker's late write after close is dropped
    assert hwm_file(manager, 1) == 2
