"""KIP-227 fetch sessions on the follower (FetchSessionHandler), alone and against the leader's FetchSessionCache
over a simulated lossy link with seeded random schedules. The handler is told which partitions changed and looks
at those only: an incremental Fetch still lists exactly what comparing every partition would."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Mapping

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
    handler.note_changed([(T1, 0)])
    second = handler.build(wanted(state(T1, 0, offset=16), state(T1, 1)))
    assert (second.session_id, second.epoch) == (55, 1)
    assert [s.partition for s in second.to_send] == [0]
    handler.handle_response(second, 55, ErrorCode.NONE)
    handler.note_changed([(T1, 1), (T2, 3)])
    third = handler.build(wanted(state(T1, 0, offset=16), state(T2, 3)))
    assert third.epoch == 2 and [(s.topic_id, s.partition) for s in third.to_send] == [(T2, 3)]
    assert third.forgotten == [(T1, 1)]


class Watched(Mapping[tuple[bytes, int], PartitionFetchState]):
    """The follower's partitions, with the keys a build looked up."""

    def __init__(self, states: dict[tuple[bytes, int], PartitionFetchState]) -> None:
        self.states = states
        self.looked_up: list[tuple[bytes, int]] = []

    def __getitem__(self, key: tuple[bytes, int]) -> PartitionFetchState:
        self.looked_up.append(key)
        return self.states[key]

    def __iter__(self) -> Iterator[tuple[bytes, int]]:
        self.looked_up.extend(self.states)
        return iter(self.states)

    def __len__(self) -> int:
        return len(self.states)


def test_an_incremental_fetch_looks_only_at_the_partitions_noted_changed() -> None:
    handler = FetchSessionHandler()
    follower = Watched(wanted(*(state(T1, p) for p in range(100))))
    handler.handle_response(handler.build(follower), 55, ErrorCode.NONE)
    follower.looked_up.clear()
    idle = handler.build(follower)
    assert (idle.epoch, idle.to_send, idle.forgotten, follower.looked_up) == (1, [], [], [])
    handler.handle_response(idle, 55, ErrorCode.NONE)
    follower.states[(T1, 7)] = state(T1, 7, offset=3)
    del follower.states[(T1, 9)]
    handler.note_changed([(T1, 7), (T1, 9), (T1, 8)])  # 8 noted, though it ends where it was
    moved = handler.build(follower)
    assert [s.partition for s in moved.to_send] == [7] and moved.forgotten == [(T1, 9)]
    assert sorted(follower.looked_up) == [(T1, 7), (T1, 8), (T1, 9)]
    handler.handle_response(moved, 55, ErrorCode.NONE)
    assert (handler.partitions[(T1, 7)].fetch_offset, (T1, 9) in handler.partitions) == (3, False)
    follower.looked_up.clear()
    assert handler.build(follower).to_send == [] and follower.looked_up == []  # settled once answered


def test_a_change_noted_while_a_fetch_is_out_is_sent_by_the_next() -> None:
    handler = FetchSessionHandler()
    handler.handle_response(handler.build(wanted(state(T1, 0))), 55, ErrorCode.NONE)
    handler.note_changed([(T1, 0)])
    out = handler.build(wanted(state(T1, 0, offset=1)))
    handler.note_changed([(T1, 0)])  # it moved again before the answer came
    handler.handle_response(out, 55, ErrorCode.NONE)
    assert [s.fetch_offset for s in handler.build(wanted(state(T1, 0, offset=2))).to_send] == [2]


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
    handler.note_changed([(T1, 0)])
    request = handler.build(wanted(state(T1, 0, offset=3)))
    if error is None:
        handler.handle_error()  # no answer: the leader may or may not have moved on
    else:
        handler.handle_response(request, 0, error)
    retry = handler.build(wanted(state(T1, 0, offset=3)))
    assert (retry.session_id, retry.epoch, len(retry.to_send)) == (closes, INITIAL_EPOCH, 1)


def test_an_answer_from_another_session_starts_over_and_is_not_used() -> None:
    handler = FetchSessionHandler()
    assert handler.handle_response(handler.build(wanted(state(T1, 0))), 55, ErrorCode.NONE) == wanted(state(T1, 0))
    assert handler.handle_response(handler.build(wanted(state(T1, 0))), 56, ErrorCode.NONE) is None
    assert handler.build(wanted(state(T1, 0))).epoch == INITIAL_EPOCH


def _send(cache: FetchSessionCache, plan: FetchRequestData, now: int):  # noqa: ANN202
    return cache.new_context(plan.session_id, plan.epoch, plan.to_send, plan.forgotten, True, now)


@pytest.mark.parametrize("seed", range(200))
def test_the_leader_always_reads_what_the_follower_would_send_in_full(seed: int) -> None:
    """Whatever is lost, restarted or evicted, and whenever the follower's partitions move (between Fetches or
    while one is out), every Fetch the leader serves reads exactly the follower's current partitions with their
    current fetch state, as a sessionless full fetch would; the handler is told only which partitions moved."""
    rng = random.Random(seed)
    ids = itertools.count(1)
    cache = FetchSessionCache(rng.choice([0, 1, 3]), lambda: next(ids), eviction_ms=50)
    handler = FetchSessionHandler()
    follower: dict[tuple[bytes, int], PartitionFetchState] = {}
    served = 0

    def move() -> None:  # the follower's partitions move, appear and go
        moved = []
        for _ in range(rng.randint(0, 2)):
            key = (rng.choice([T1, T2]), rng.randrange(4))
            if key in follower and rng.random() < 0.3:
                del follower[key]
            else:
                old = follower.get(key, state(*key))
                follower[key] = state(*key, offset=old.fetch_offset + rng.randint(0, 3), epoch=rng.choice([0, 0, 1]))
            moved.append(key)
        handler.note_changed(moved)

    for now in range(300):
        move()
        if rng.random() < 0.03:
            cache.sessions.clear()  # the leader restarted
        if rng.random() < 0.05:  # another fetcher takes the only slots
            cache.new_context(0, INITIAL_EPOCH, [], [], rng.random() < 0.5, now)
        if not follower:
            continue
        plan = handler.build(follower)
        if rng.random() < 0.1:
            handler.handle_error()  # lost on the way there
            continue
        sent = dict(follower)
        context = _send(cache, plan, now)
        if context.error == ErrorCode.NONE:
            read = {cached.state.key: cached.state for t in context.targets for cached in t.partitions}
            assert read == sent
            served += 1
        if rng.random() < 0.3:
            move()  # while the Fetch is out
        if rng.random() < 0.1:
            handler.handle_error()  # the answer was lost
        else:
            handler.handle_response(plan, context.session_id, context.error)
    assert served > 0
