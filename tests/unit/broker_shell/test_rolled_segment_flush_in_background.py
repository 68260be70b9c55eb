"""A broker's rolled segments are fsynced in a worker thread, as Kafka's scheduler flushes them: the event loop
keeps turning while the fsync is stuck (as behind kernel writeback), and the recovery point moves once it is done."""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from pathlib import Path

import pytest

from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.common.record_batch import Record, build_batch
from minikafka.storage.log_config import LogConfig


async def test_a_rolled_segment_is_fsynced_off_the_loop_and_then_moves_the_recovery_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = LogManager(tmp_path, lambda topic: LogConfig(segment_bytes=400), flush_in_background=True)
    log = manager.get_or_create(TopicPartition("orders", 0), uuid.uuid4(), 0)

    fsynced: list[int] = []
    release = threading.Event()
    real_fsync = os.fsync

    def slow_fsync(fd: int) -> None:  # os.fsync itself: checkpoints on the loop pass straight through
        if threading.current_thread() is not threading.main_thread():
            fsynced.append(fd)
            release.wait(10)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", slow_fsync)
    while len(log.segments) == 1:
        log.append_as_leader(build_batch([Record(b"0123456789" * 5)]), 1, 0)
    rolled_end = log.segments[1].base_offset
    ticks = 0
    while not fsynced and ticks < 10000:  # the loop keeps turning while the worker is stuck in the fsync
        await asyncio.sleep(0)
        ticks += 1
    assert fsynced and log.recovery_point == 0
    release.set()
    deadline = asyncio.get_running_loop().time() + 10
    while log.recovery_point != rolled_end:
        assert asyncio.get_running_loop().time() < deadline, "the recovery point never moved"
        await asyncio.sleep(0.01)
    assert len(fsynced) == 2 and not log.segments[0].dirty  # the rolled .log and .index, in a worker thread
    manager.close_all(0)
