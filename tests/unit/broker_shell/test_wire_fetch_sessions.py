"""KIP-227 fetch sessions on the Kafka listener, through the wire Fetch handler and a real ReplicaManager and logs:
epoch 0 opens a session, incremental fetches answer only partitions with news and drop forgotten ones, a wrong
epoch or unknown id is a top-level error, epoch -1 stays sessionless; topics by name (v12) and by id (v16)."""

from __future__ import annotations

import datetime
import itertools
from dataclasses import replace
from pathlib import Path
from typing import Any

from kio.schema.fetch.v12 import request as v12
from kio.schema.fetch.v16 import request as v16
from test_fetch_sessions_served import FOLLOWER_EPOCH, LEADER_EPOCH, TOPIC_ID, leader_of_two_partitions

from minikafka.broker.fetch_session import FetchSessionCache
from minikafka.broker.kafka_wire import fetch
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch

NO_WAIT = datetime.timedelta(0)
SESSION = 42


def _v12(
    offsets: dict[str, dict[int, int]], session_id: int, epoch: int, forgotten: dict[str, list[int]] | None = None
) -> Request:
    topics = tuple(
        v12.FetchTopic(
            topic=name,
            partitions=tuple(
                v12.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20) for p, o in lines.items()
            ),
        )
        for name, lines in offsets.items()
    )
    gone = tuple(v12.ForgottenTopic(topic=n, partitions=tuple(ps)) for n, ps in (forgotten or {}).items())
    body = v12.FetchRequest(
        max_wait=NO_WAIT,
        min_bytes=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=topics,
        forgotten_topics_data=gone,
    )
    return Request(ApiHeader(1, 12, 1), "test", body)


def _v16(offsets: dict[int, int], session_id: int, epoch: int) -> Request:
    partitions = tuple(
        v16.FetchPartition(partition=p, fetch_offset=o, partition_max_bytes=1 << 20) for p, o in offsets.items()
    )
    body = v16.FetchRequest(
        cluster_id=None,
        replica_state=v16.ReplicaState(),
        max_wait=NO_WAIT,
        min_bytes=0,
        session_id=session_id,
        session_epoch=epoch,
        topics=(v16.FetchTopic(topic_id=TOPIC_ID, partitions=partitions),) if partitions else (),
        forgotten_topics_data=(),
    )
    return Request(ApiHeader(1, 16, 1), "test", body)


def answered(response: Any) -> dict[tuple[str, int], tuple[int, int, int]]:
    """(topic, partition) -> (error code, high watermark, bytes of records)"""
    return {
        (str(getattr(t, "topic", None) or t.topic_id), p.partition_index): (
            int(p.error_code.value),
            p.high_watermark,
            len(p.records or b""),
        )
        for t in response.responses
        for p in t.partitions
    }


def committed(manager: ReplicaManager, partition: int, count: int) -> int:
    """Append `count` records and let both followers fetch them, so the HWM (what consumers read) moves."""
    tp = TopicPartition("orders", partition)
    batch = build_batch([Record(b"v%d" % i) for i in range(count)])
    manager.produce(tp, batch, 1, 30000)
    end = manager.replicas[tp].log.log_end_offset
    for follower in (1, 2):
        manager.follower_fetch(tp, follower, FOLLOWER_EPOCH, LEADER_EPOCH, end, LEADER_EPOCH, 1 << 20)
    assert manager.replicas[tp].role.high_watermark == end
    return len(batch)


def context(manager: ReplicaManager) -> WireContext:
    return WireContext(manager, "PLAINTEXT", fetch_sessions=FetchSessionCache(10, itertools.count(SESSION).__next__))


async def test_incremental_fetches_by_name_answer_news_and_forget(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    ctx = context(manager)
    first = await fetch.handle(ctx, _v12({"orders": {0: 0, 1: 0}}, 0, 0))
    assert first.session_id == SESSION and int(first.error_code.value) == 0
    assert answered(first) == {("orders", 0): (0, 0, 0), ("orders", 1): (0, 0, 0)}

    idle = await fetch.handle(ctx, _v12({}, SESSION, 1))
    assert idle.session_id == SESSION and answered(idle) == {}

    size = committed(manager, 1, 2)
    news = await fetch.handle(ctx, _v12({}, SESSION, 2))
    assert answered(news) == {("orders", 1): (0, 2, size)}  # partition 0 has nothing new: left out

    moved = await fetch.handle(ctx, _v12({"orders": {1: 2}}, SESSION, 3, forgotten={"orders": [0]}))
    assert answered(moved) == {}  # the consumer is at the HWM of 1; 0 left the session
    committed(manager, 0, 1)
    after = await fetch.handle(ctx, _v12({}, SESSION, 4))
    assert answered(after) == {}  # news on a forgotten partition is not sent
    assert [p.state.partition for p in ctx.fetch_sessions.sessions[SESSION].partitions.values()] == [1]


async def test_session_errors_are_top_level(tmp_path: Path) -> None:
    ctx = context(leader_of_two_partitions(tmp_path))
    await fetch.handle(ctx, _v16({0: 0}, 0, 0))
    stale = await fetch.handle(ctx, _v16({}, SESSION, 5))
    assert (int(stale.error_code.value), stale.session_id, stale.responses) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        0,
        (),
    )
    unknown = await fetch.handle(ctx, _v16({}, 7, 1))
    assert int(unknown.error_code.value) == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    by_id = await fetch.handle(ctx, _v16({}, SESSION, 1))  # the right epoch still works after both
    assert int(by_id.error_code.value) == 0 and by_id.session_id == SESSION


async def test_epoch_minus_one_is_sessionless_and_closes_a_named_session(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    ctx = context(manager)
    await fetch.handle(ctx, _v16({0: 0}, 0, 0))
    full = await fetch.handle(ctx, _v16({0: 0, 1: 0}, SESSION, -1))
    assert full.session_id == 0 and len(answered(full)) == 2
    assert ctx.fetch_sessions.sessions == {}


async def test_unknown_topic_names_keep_their_own_places_in_a_session(tmp_path: Path) -> None:
    ctx = context(leader_of_two_partitions(tmp_path))
    first = await fetch.handle(ctx, _v12({"gone": {0: 0}, "missing": {0: 0}, "orders": {0: 0}}, 0, 0))
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert answered(first) == {
        ("gone", 0): (unknown, -1, 0),
        ("missing", 0): (unknown, -1, 0),
        ("orders", 0): (0, 0, 0),
    }
    again = await fetch.handle(ctx, _v12({}, SESSION, 1))
    assert set(answered(again)) == {("gone", 0), ("missing", 0)}  # errors are always news


async def test_without_a_session_cache_a_new_session_is_not_offered(tmp_path: Path) -> None:
    ctx = WireContext(leader_of_two_partitions(tmp_path), "PLAINTEXT")
    first = await fetch.handle(ctx, _v16({0: 0}, 0, 0))
    assert first.session_id == 0 and len(answered(first)) == 1


async def test_min_bytes_zero_and_an_empty_fetch_do_not_wait(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)

    async def no_waiting(*_args: object) -> None:
        raise AssertionError("a fetch that asks for no bytes waited")

    manager.wait_for_change = no_waiting  # type: ignore[method-assign]
    ctx = context(manager)
    long_wait = datetime.timedelta(seconds=60)
    request = _v16({0: 0}, 0, -1)
    answer = await fetch.handle(ctx, Request(request.header, "test", replace(request.body, max_wait=long_wait)))
    assert len(answered(answer)) == 1
    empty = _v16({}, 0, -1)
    answer = await fetch.handle(
        ctx, Request(empty.header, "test", replace(empty.body, max_wait=long_wait, min_bytes=1))
    )
    assert answered(answer) == {}
