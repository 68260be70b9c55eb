"""A leader's log end acknowledged as an acks=all write is: what a coordinator that loaded an uncommitted tail of
its log waits for before it answers from it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from minikafka.broker.log_manager import TopicPartition
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from tests.unit.broker_shell.test_produce_wakes_followers import TP, leading_manager


async def test_nothing_to_wait_for_when_the_high_watermark_is_at_the_log_end(tmp_path: Path) -> None:
    assert leading_manager(tmp_path).high_watermark_reached(TP, 30000) is None


async def test_a_tail_the_followers_never_fetch_times_out_as_an_acks_all_write_would(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    assert manager.produce(TP, build_batch([Record(b"v")]), 1, 30000).result().error == ErrorCode.NONE
    tail = manager.high_watermark_reached(TP, 1)
    assert tail is not None and not tail.done()
    result = await asyncio.wait_for(tail, 5)
    assert (result.error, result.base_offset) == (ErrorCode.REQUEST_TIMED_OUT, 1)


async def test_a_partition_not_led_here_is_not_leader_or_follower(tmp_path: Path) -> None:
    tail = leading_manager(tmp_path).high_watermark_reached(TopicPartition("other", 0), 30000)
    assert tail is not None and tail.result().error == ErrorCode.NOT_LEADER_OR_FOLLOWER
