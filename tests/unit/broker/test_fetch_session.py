"""KIP-227 fetch sessions on the leader: FetchSessionCache's contexts, errors, answer cutting and eviction."""

from __future__ import annotations

import itertools

from minikafka.broker.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    MAX_EPOCH,
    CachedPartition,
    FetchContext,
    FetchSessionCache,
    PartitionAnswer,
    PartitionFetchState,
    PartitionKey,
    SettledRead,
    must_answer,
    next_epoch,
)
from minikafka.common.errors import ErrorCode

T1 = b"\x01" * 16
T2 = b"\x02" * 16


def line(topic_id: bytes, partition: int, fetch_offset: int = 0) -> PartitionFetchState:
    return PartitionFetchState(topic_id, topic_id.hex()[:4], partition, 0, fetch_offset, -1, 0, 1048576)


def cache(slots: int = 10, eviction_ms: int = 120_000) -> FetchSessionCache:
    ids = itertools.count(7)
    return FetchSessionCache(slots, lambda: next(ids), eviction_ms)


def full(
    sessions: FetchSessionCache, *lines: PartitionFetchState, privileged: bool = True, now: int = 0
) -> FetchContext:
    return sessions.new_context(0, INITIAL_EPOCH, lines, [], privileged, now)


def keys(context: FetchContext) -> list[tuple[bytes, int]]:
    return [cached.state.key for topic in context.targets for cached in topic.partitions]


def test_a_full_fetch_creates_a_session_holding_its_partitions() -> None:
    sessions = cache()
    context = full(sessions, line(T1, 0, 5), line(T1, 1, 9), line(T2, 0, 3))
    assert context.error == ErrorCode.NONE and context.session_id == 7 and not context.incremental
    assert keys(context) == [(T1, 0), (T1, 1), (T2, 0)]
    assert [len(topic.partitions) for topic in context.targets] == [2, 1]  # grouped by topic
    assert context.session is not None and context.session.epoch == 1


def test_an_incremental_fetch_updates_adds_and_forgets_and_reads_the_whole_session() -> None:
    sessions = cache()
    full(sessions, line(T1, 0, 5), line(T1, 1, 9))
    context = sessions.new_context(7, 1, [line(T1, 0, 6), line(T2, 4, 0)], [(T1, 1)], True, 10)
    assert context.error == ErrorCode.NONE and context.incremental and context.session_id == 7
    assert keys(context) == [(T1, 0), (T2, 4)]
    assert context.targets[0].partitions[0].state.fetch_offset == 6  # the request's new state, kept for later fetches
    assert sessions.sessions[7].epoch == 2
    again = sessions.new_context(7, 2, [], [], True, 20)
    assert keys(again) == [(T1, 0), (T2, 4)] and again.targets[0].partitions[0].state.fetch_offset == 6


def test_an_unknown_session_or_a_wrong_epoch_is_a_top_level_error() -> None:
    sessions = cache()
    full(sessions, line(T1, 0))
    assert sessions.new_context(99, 1, [], [], True, 0).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    stale = sessions.new_context(7, 3, [], [], True, 0)
    assert stale.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH and stale.session_id == INVALID_SESSION_ID
    assert sessions.new_context(7, 1, [], [], True, 0).error == ErrorCode.NONE  # the session survived the error


def test_a_full_fetch_closes_the_session_it_names() -> None:
    sessions = cache()
    full(sessions, line(T1, 0))
    renewed = sessions.new_context(7, INITIAL_EPOCH, [line(T1, 0)], [], True, 0)
    assert renewed.session_id == 8 and set(sessions.sessions) == {8}
    closed = sessions.new_context(8, FINAL_EPOCH, [line(T1, 0)], [], False, 0)
    assert closed.session_id == INVALID_SESSION_ID and closed.session is None and sessions.sessions == {}
    assert keys(closed) == [(T1, 0)]  # answered sessionless, in full


def test_sessionless_fetches_and_zero_slots_make_no_session() -> None:
    assert cache().new_context(0, FINAL_EPOCH, [line(T1, 0)], [], False, 0).session is None
    off = cache(slots=0)
    context = full(off, line(T1, 0))
    assert context.session_id == INVALID_SESSION_ID and context.session is None and off.sessions == {}


def test_a_full_cache_evicts_a_stale_session_or_for_a_follower_a_consumers() -> None:
    sessions = cache(slots=2, eviction_ms=1000)
    full(sessions, line(T1, 0), privileged=False, now=0)  # 7, a consumer's
    full(sessions, line(T1, 0), privileged=True, now=500)  # 8, a follower's
    assert full(sessions, line(T1, 0), privileged=False, now=900).session is None  # nothing stale yet
    assert full(sessions, line(T1, 0), privileged=True, now=900).session_id == 9  # evicts the consumer's 7
    assert set(sessions.sessions) == {8, 9}
    assert full(sessions, line(T1, 0), privileged=True, now=1200).session is None  # 8 used at 500: not stale
    assert full(sessions, line(T1, 0), privileged=False, now=1500).session_id == 10  # now 8 is
    assert set(sessions.sessions) == {9, 10}


def test_using_a_session_keeps_it_from_eviction() -> None:
    sessions = cache(slots=2, eviction_ms=1000)
    full(sessions, line(T1, 0), now=0)  # 7
    full(sessions, line(T1, 0), now=100)  # 8
    sessions.new_context(7, 1, [], [], True, 1500)  # 7 is now the most recently used
    assert full(sessions, line(T1, 0), now=1600).session_id == 9
    assert set(sessions.sessions) == {7, 9}


def test_an_incremental_answer_lists_only_partitions_with_news() -> None:
    cached = CachedPartition(line(T1, 0))
    assert must_answer(cached, PartitionAnswer(0, False, 5, 0))  # never sent
    cached.high_watermark, cached.leader_log_start_offset = 5, 0
    assert not must_answer(cached, PartitionAnswer(0, False, 5, 0))
    assert must_answer(cached, PartitionAnswer(100, False, 5, 0))
    assert must_answer(cached, PartitionAnswer(0, True, 5, 0))
    assert must_answer(cached, PartitionAnswer(0, False, 6, 0))
    assert must_answer(cached, PartitionAnswer(0, False, 5, 3))


def test_recorded_answers_are_remembered_and_partitions_with_data_go_last() -> None:
    sessions = cache()
    context = full(sessions, line(T1, 0), line(T1, 1), line(T1, 2))
    first, second, third = context.targets[0].partitions
    sessions.record_answers(
        context,
        [(first, PartitionAnswer(10, False, 4, 0)), (second, PartitionAnswer(0, False, 4, 0))],
    )
    assert (first.high_watermark, second.high_watermark, third.high_watermark) == (4, 4, -1)
    assert keys(sessions.new_context(7, 1, [], [], True, 0)) == [(T1, 1), (T1, 2), (T1, 0)]


def test_the_epoch_wraps_to_one() -> None:
    assert next_epoch(INITIAL_EPOCH) == 1 and next_epoch(41) == 42 and next_epoch(MAX_EPOCH) == 1


def follower_session(sessions: FetchSessionCache, *lines: PartitionFetchState, now: int = 0) -> FetchContext:
    return sessions.new_context(0, INITIAL_EPOCH, lines, [], True, now, replica_id=1)


def read_now(context: FetchContext, *partitions: PartitionKey) -> list[SettledRead]:
    """`partitions` found settled by a read made now."""
    assert context.session is not None
    return [SettledRead(key, context.session.marks) for key in partitions]


def settle(sessions: FetchSessionCache, context: FetchContext) -> None:
    """The leader found every partition of the read settled (the follower in the ISR at its log end)."""
    sessions.record_answers(context, [], settled=read_now(context, *keys(context)))


def test_a_follower_session_reads_only_listed_changed_and_unsettled_partitions() -> None:
    sessions = cache()
    created = follower_session(sessions, line(T1, 0), line(T1, 1), line(T2, 0))
    assert keys(created) == [(T1, 0), (T1, 1), (T2, 0)]  # the full fetch reads and answers every one
    sessions.record_answers(created, [], settled=read_now(created, (T1, 0), (T2, 0)), unsettled=[(T1, 1)])
    idle = sessions.new_context(7, 1, [], [], True, 10, replica_id=1)
    assert keys(idle) == [(T1, 1)]  # the settled ones are not read
    sessions.record_answers(idle, [], settled=read_now(idle, (T1, 1)))
    assert keys(sessions.new_context(7, 2, [], [], True, 20, replica_id=1)) == []
    # A change the leader marks, and a line the follower sends, are read; the whole session when asked to.
    assert sessions.mark_changed((T2, 0)) == {1: 20}  # caught up as of the session's last Fetch
    assert sessions.mark_changed((T2, 0)) == {}  # already to be read: nothing more to vouch for
    assert sessions.mark_changed((T2, 9)) == {}  # not in the session
    listed = sessions.new_context(7, 3, [line(T1, 0, 4)], [], True, 30, replica_id=1)
    assert keys(listed) == [(T1, 0), (T2, 0)] and listed.settled_until == {(T1, 0): 20}
    everything = sessions.new_context(7, 4, [], [], True, 40, replica_id=1, read_all=True)
    assert keys(everything) == [(T1, 0), (T1, 1), (T2, 0)]


def test_a_woken_re_read_adds_the_partitions_changed_while_it_waited() -> None:
    sessions = cache()
    settle(sessions, created := follower_session(sessions, line(T1, 0), line(T1, 1), line(T1, 2)))
    assert created.session is not None
    waiting = sessions.new_context(7, 1, [line(T1, 2, 3)], [], True, 10, replica_id=1)
    assert keys(waiting) == [(T1, 2)]
    sessions.mark_changed((T1, 0))
    assert keys(sessions.reread(waiting)) == [(T1, 0), (T1, 2)]  # in the session's fetch order


def test_a_partition_changed_after_the_read_that_found_it_settled_is_read_again() -> None:
    sessions = cache()
    settle(sessions, follower_session(sessions, line(T1, 0), line(T1, 1)))
    waiting = sessions.new_context(7, 1, [line(T1, 0, 3)], [], True, 10, replica_id=1)
    found = read_now(waiting, (T1, 0))  # at the leader's log end; then the Fetch waits
    assert sessions.mark_changed((T1, 0)) == {}  # e.g. DeleteRecords while it waits: already to be read
    sessions.mark_changed((T1, 1))
    sessions.record_answers(waiting, [], settled=found)  # it timed out: the answer of the read before the change
    assert keys(sessions.new_context(7, 2, [], [], True, 20, replica_id=1)) == [(T1, 0), (T1, 1)]


def test_a_forgotten_partition_is_neither_read_nor_marked() -> None:
    sessions = cache()
    settle(sessions, follower_session(sessions, line(T1, 0), line(T1, 1)))
    sessions.mark_changed((T1, 1))
    context = sessions.new_context(7, 1, [], [(T1, 1)], True, 10, replica_id=1)
    assert keys(context) == [] and sessions.mark_changed((T1, 1)) == {}


def test_consumer_sessions_still_read_every_partition() -> None:
    sessions = cache()
    created = full(sessions, line(T1, 0), line(T1, 1), privileged=False)
    settle(sessions, created)
    assert keys(sessions.new_context(7, 1, [], [], False, 10)) == [(T1, 0), (T1, 1)]
    assert sessions.mark_changed((T1, 0)) == {}
