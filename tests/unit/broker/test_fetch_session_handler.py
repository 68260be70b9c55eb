"""KIP-227 fetch sessions on the follower (FetchSessionHandler), alone and against the leader's FetchSessionCache
over a simulated lossy link with seeded random schedules."""

from __future__ import annotations

import itertools
import random

import pytest

from minikafka.broker.fetch_session import INITIAL_EPOCH, FetchSessionCache, PartitionFetchState
from minikafka.broker.fetch_session_handler import FetchRequestData, FetchSessionHandler
from minikafka.common.errors import ErrorCode

T1 = b"\x01" * 16
T2 = b"\x02" * 16


def state(topic_id: bytes, partition: int, offset: int = 0, epoch: int = 0) -> PartitionFetchState:
    return PartitionFetchState(topic_id, topic_id.hex()[:4], partition, epoch, offset, epoch, 0, 1048576)


def wanted(*states: PartitionFetchState) -> dict[tuple[bytes, int], PartitionFetchState]:
    return {(s.topic_id, s.partition): s for s in states}


def test_the_first_fetch_is_full_then_only_changes_are_sent() -> None:
    handler = FetchSessionHandler()
    first = handler.build(wanted(state(T1, 0), state(T1, 1)))
    assert (first.session_id, first.epoch, len(first.to_send), first.forgotten) == (0, INITIAL_EPOCH, 2, [])
    handler.handle_response(first, 55, ErrorCode.NONE)
    second = handler.build(wanted(state(T1, 0, offset=16), state(T1, 1)))
    assert (second.session_id, second.epoch) == (55, 1)
    assert [s.partition for s in second.to_send] == [0]
    handler.handle_response(second, 55, ErrorCode.NONE)
    third = handler.build(wanted(state(T1, 0, offset=16), state(T2, 3)))
    assert third.epoch == 2 and [(s.topic_id, s.partition) for s in third.to_send] == [(T2, 3)]
    assert third.forgotten == [(T1, 1)]


def test_no_session_on_offer_keeps_fetching_in_full() -> None:
    handler = FetchSessionHandler()
    handler.handle_response(handler.build(wanted(state(T1, 0))), 0, ErrorCode.NONE)
    again = handler.build(wanted(state(T1, 0)))
    assert (again.session_id, again.epoch, len(again.to_send)) == (0, INITIAL_EPOCH, 1)


@pytest.mark.parametrize(
    ("error", "closes"),
    [(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0), (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 55), (None, 55)],
)
def test_errors_go_back_to_a_full_fetch(error: ErrorCode | None, closes: int) -> None:
    handler = FetchSessionHandler()
    handler.handle_response(handler.build(wanted(state(T1, 0))), 55, ErrorCode.NONE)
    request = handler.build(wanted(state(T1, 0, offset=3)))
    if error is None:
        handler.handle_error()  # no answer: the leader may or may not have moved on
    else:
        handler.handle_response(request, 0, error)
    retry = handler.build(wanted(state(T1, 0, offset=3)))
    assert (retry.session_id, retry.epoch, len(retry.to_send)) == (closes, INITIAL_EPOCH, 1)


def test_an_answer_from_another_session_starts_over() -> None:
    handler = FetchSessionHandler()
    handler.handle_response(handler.build(wanted(state(T1, 0))), 55, ErrorCode.NONE)
    handler.handle_response(handler.build(wanted(state(T1, 0))), 56, ErrorCode.NONE)
    assert handler.build(wanted(state(T1, 0))).epoch == INITIAL_EPOCH


def _send(cache: FetchSessionCache, plan: FetchRequestData, now: int):  # noqa: ANN202
    return cache.new_context(plan.session_id, plan.epoch, plan.to_send, plan.forgotten, True, now)


@pytest.mark.parametrize("seed", range(200))
def test_the_leader_always_reads_what_the_follower_would_send_in_full(seed: int) -> None:
    """Whatever is lost, restarted or evicted, every Fetch the leader serves reads exactly the follower's current
    partitions with their current fetch state, as a sessionless full fetch would."""
    rng = random.Random(seed)
    ids = itertools.count(1)
    cache = FetchSessionCache(rng.choice([0, 1, 3]), lambda: next(ids), eviction_ms=50)
    handler = FetchSessionHandler()
    follower: dict[tuple[bytes, int], PartitionFetchState] = {}
    served = 0
    for now in range(300):
        for _ in range(rng.randint(0, 2)):  # the follower's partitions move, appear and go
            key = (rng.choice([T1, T2]), rng.randrange(4))
            if key in follower and rng.random() < 0.3:
                del follower[key]
            else:
                old = follower.get(key, state(*key))
                follower[key] = state(*key, offset=old.fetch_offset + rng.randint(0, 3), epoch=rng.choice([0, 0, 1]))
        if rng.random() < 0.03:
            cache.sessions.clear()  # the leader restarted
        if rng.random() < 0.05:  # another fetcher takes the only slots
            cache.new_context(0, INITIAL_EPOCH, [], [], rng.random() < 0.5, now)
        if not follower:
            continue
        plan = handler.build(dict(follower))
        if rng.random() < 0.1:
            handler.handle_error()  # lost on the way there
            continue
        context = _send(cache, plan, now)
        if context.error == ErrorCode.NONE:
            read = {cached.state.key: cached.state for t in context.targets for cached in t.partitions}
            assert read == follower
            served += 1
        if rng.random() < 0.1:
            handler.handle_error()  # the answer was lost
        else:
            handler.handle_response(plan, context.session_id, context.error)
    assert served > 0
