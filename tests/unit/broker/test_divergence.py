"""The leader's diverging-epoch answer and the follower's truncation (Kafka's Fetch v12+ rules)."""

from __future__ import annotations

from minikafka.broker.replica.divergence import EpochEndOffset, diverging_epoch, follower_truncation
from minikafka.storage.leader_epoch_cache import EpochEntry, LeaderEpochCache

UNDEFINED = EpochEndOffset(-1, -1)


def test_a_fetch_that_continues_the_leaders_log_has_no_divergence() -> None:
    assert diverging_epoch(EpochEndOffset(3, 20), last_fetched_epoch=3, fetch_offset=20) is None
    assert diverging_epoch(EpochEndOffset(3, 20), last_fetched_epoch=3, fetch_offset=12) is None
    assert diverging_epoch(EpochEndOffset(-1, -1), last_fetched_epoch=-1, fetch_offset=0) is None


def test_the_leader_answers_where_the_followers_epoch_ends() -> None:
    assert diverging_epoch(EpochEndOffset(3, 20), last_fetched_epoch=3, fetch_offset=21) == EpochEndOffset(3, 20)
    assert diverging_epoch(EpochEndOffset(2, 10), last_fetched_epoch=3, fetch_offset=11) == EpochEndOffset(2, 10)


def test_an_undefined_answer_never_cuts_below_the_fetch_offset() -> None:
    """Before the fix the follower mapped (-1, -1) to its log start and wiped its log while in the ISR."""
    truncation = follower_truncation(UNDEFINED, EpochEndOffset(4, 11), log_end_offset=11, fetch_offset=11)
    assert truncation.offset == 11 and truncation.completed


def test_the_follower_cuts_to_the_lowest_end_of_the_shared_epoch() -> None:
    truncation = follower_truncation(EpochEndOffset(3, 10), EpochEndOffset(3, 14), log_end_offset=16, fetch_offset=16)
    assert truncation.offset == 10 and truncation.completed
    truncation = follower_truncation(EpochEndOffset(3, 18), EpochEndOffset(3, 14), log_end_offset=16, fetch_offset=16)
    assert truncation.offset == 14 and truncation.completed


def test_an_epoch_the_follower_never_had_cuts_to_its_own_earlier_epoch_and_asks_again() -> None:
    truncation = follower_truncation(EpochEndOffset(4, 30), EpochEndOffset(2, 12), log_end_offset=16, fetch_offset=16)
    assert truncation.offset == 12 and not truncation.completed


def test_a_follower_without_epochs_cuts_to_the_leaders_offset() -> None:
    truncation = follower_truncation(EpochEndOffset(3, 10), UNDEFINED, log_end_offset=16, fetch_offset=16)
    assert truncation.offset == 10 and truncation.completed


def test_a_new_leader_that_cached_its_epoch_defines_the_followers_newer_epoch() -> None:
    """Offsets 0-9 in epoch 1 on both; the follower also has offset 10 from epoch 2 (another leader). The new leader
    is elected in epoch 3 with LEO 10: with its epoch cached it answers (1, 10); without, undefined."""
    leader = LeaderEpochCache(None, [EpochEntry(1, 0)])
    follower = LeaderEpochCache(None, [EpochEntry(1, 0), EpochEntry(2, 10)])
    assert leader.end_offset_for(2, 10) == (-1, -1)  # what the leader answered before the fix
    leader.assign(3, 10)
    answer = diverging_epoch(EpochEndOffset(*leader.end_offset_for(2, 10)), last_fetched_epoch=2, fetch_offset=11)
    assert answer == EpochEndOffset(1, 10)
    local = EpochEndOffset(*follower.end_offset_for(answer.epoch, 11))
    assert follower_truncation(answer, local, log_end_offset=11, fetch_offset=11).offset == 10
