"""The pure partition core: role transitions, ISR expansion and shrink, HWM, AlterPartition
answers, acks=all checks, and the shell's holder."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from minikafka.broker.replica.partition import (
    AlterPartitionResult,
    AssignEpochStartOffset,
    BrokerState,
    Committed,
    FailPendingProduces,
    Follower,
    Leader,
    ListedOffset,
    OutOfRangeRecovery,
    PartitionConfig,
    PartitionMetadata,
    PendingExpandIsr,
    PendingShrinkIsr,
    SendAlterPartition,
    StartFetching,
    StopFetching,
    apply_metadata,
    make_follower,
    make_leader,
)
from minikafka.broker.replica.replica_state import ReplicaState
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.records import LeaderRecoveryState

CONFIG = PartitionConfig(min_insync_replicas=2, replica_lag_time_max_ms=1000)
EPOCHS = {0: 10, 1: 11, 2: 12}  # what the metadata shows for each broker


def leader(isr: tuple[int, ...] = (0, 1, 2), leo: int = 10, hwm: int = 0, now: int = 0, **kw: object) -> Leader:
    metadata = PartitionMetadata((0, 1, 2), isr, 0, kw.pop("leader_epoch", 5), kw.pop("partition_epoch", 7))  # type: ignore[arg-type]
    state = make_leader("t-0", 0, 10, metadata, leo, hwm, kw.pop("config", CONFIG), now).state  # type: ignore[arg-type]
    assert isinstance(state, Leader)
    return state


def fetch(state: Leader, replica: int, offset: int, now: int, epoch: int | None = None, leader_epoch: int = 5):  # noqa: ANN201
    return state.on_follower_fetch(
        replica, EPOCHS[replica] if epoch is None else epoch, leader_epoch, offset, EPOCHS, now
    )


# ---- transitions ----


def test_make_leader_sets_leso_clears_followers_and_stops_fetching() -> None:
    with capture_logs() as events:
        transition = make_leader(
            "t-0", 0, 10, PartitionMetadata((0, 1, 2), (0, 1), 0, 5, 7), 42, 30, CONFIG, now_ms=100
        )
    state = transition.state
    assert isinstance(state, Leader)
    assert state.leader_epoch_start_offset == 42 and state.high_watermark == 30
    assert transition.effects == (StopFetching(), AssignEpochStartOffset(5, 42))
    assert all(f.log_end_offset == -1 and f.broker_epoch == -1 for f in state.followers)
    assert state.follower(1).last_caught_up_ms == 100 and state.follower(2).last_caught_up_ms == -1
    assert events[0]["event"] == "become_leader" and events[0]["leader_epoch_start_offset"] == 42


def test_a_sole_isr_leader_advances_the_hwm_to_its_leo_when_min_isr_allows() -> None:
    config = PartitionConfig(min_insync_replicas=1, replica_lag_time_max_ms=1000)
    state = leader(isr=(0,), leo=10, hwm=3, config=config)
    assert state.high_watermark == 10


def test_a_follower_fenced_out_of_the_isr_no_longer_holds_the_hwm_back() -> None:
    """The controller fences a follower and drops it from the ISR while its last Fetch still counts as caught up:
    it must not hold the HWM as a replica about to rejoin, or an acks=all write waits for a broker that is gone."""
    config = PartitionConfig(min_insync_replicas=1, replica_lag_time_max_ms=1000)
    state = fetch(leader(isr=(0, 1), leo=10, hwm=10, config=config), 1, 10, now=5).state
    shrunk = PartitionMetadata((0, 1, 2), (0,), 0, 5, 8)
    unfenced = {0: 10, 2: 12}  # 1 is fenced
    kept = apply_metadata(state, "t-0", 0, 10, shrunk, 10, 10, config, 6)
    told = apply_metadata(state, "t-0", 0, 10, shrunk, 10, 10, config, 6, unfenced)
    assert kept is not None and told is not None
    assert kept.state.on_local_append(20, 7)[0].high_watermark == 10  # 1 still looks about to join
    assert told.state.on_local_append(20, 7)[0].high_watermark == 20


def test_the_strict_min_isr_rule_holds_the_hwm_of_a_leader_below_min_isr() -> None:
    """KIP-966: with eligible.leader.replicas.version 1 a sole leader under min ISR 2 commits nothing (acks=1 writes
    stay invisible); at version 0, as Kafka 3.x, its HWM follows its LEO."""
    strict = leader(isr=(0,), leo=10, hwm=3)
    assert strict.high_watermark == 3
    assert strict.on_local_append(12, 1)[0].high_watermark == 3
    lax = leader(isr=(0,), leo=10, hwm=3, config=PartitionConfig(2, 1000, strict_min_isr=False))
    assert lax.high_watermark == 10
    assert lax.on_local_append(12, 1)[0].high_watermark == 12


def test_make_follower_fetches_from_the_new_leader_at_its_leo() -> None:
    transition = make_follower("t-0", 1, PartitionMetadata((0, 1, 2), (0, 1, 2), 0, 5, 7), 17, 20)
    assert isinstance(transition.state, Follower)
    assert transition.state.high_watermark == 17  # never above our own LEO
    assert transition.effects == (StopFetching(), StartFetching(0, 5, 17))


def test_leader_to_follower_fails_waiting_produces() -> None:
    state = leader()
    transition = apply_metadata(state, "t-0", 0, 10, PartitionMetadata((0, 1, 2), (1, 2), 1, 6, 8), 10, 0, CONFIG, 5)
    assert transition is not None and isinstance(transition.state, Follower)
    assert transition.effects[0] == FailPendingProduces(ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert StartFetching(1, 6, 10) in transition.effects


def test_older_partition_epochs_are_ignored_and_equal_ones_change_nothing() -> None:
    state = leader()
    older = PartitionMetadata((0, 1, 2), (0,), 0, 5, 6)
    with capture_logs() as events:
        assert apply_metadata(state, "t-0", 0, 10, older, 10, 0, CONFIG, 5) is None
    assert events[0]["event"] == "partition_update_ignored"
    assert events[0]["known_partition_epoch"] == 7 and events[0]["update_partition_epoch"] == 6
    same = PartitionMetadata((0, 1, 2), (0, 1, 2), 0, 5, 7)
    assert apply_metadata(state, "t-0", 0, 10, same, 10, 0, CONFIG, 5) is None


def test_follower_same_epoch_update_only_changes_the_isr() -> None:
    follower = make_follower("t-0", 1, PartitionMetadata((0, 1, 2), (0, 1, 2), 0, 5, 7), 17, 10).state
    transition = apply_metadata(
        follower, "t-0", 1, 11, PartitionMetadata((0, 1, 2), (0, 1), 0, 5, 8), 17, 10, CONFIG, 5
    )
    assert transition is not None and transition.effects == ()
    assert transition.state.isr == frozenset({0, 1})


def test_follower_new_leader_epoch_moves_to_the_new_leaders_fetcher() -> None:
    follower = make_follower("t-0", 1, PartitionMetadata((0, 1, 2), (0, 1, 2), 0, 5, 7), 17, 10).state
    transition = apply_metadata(
        follower, "t-0", 1, 11, PartitionMetadata((0, 1, 2), (1, 2), 2, 6, 8), 17, 10, CONFIG, 5
    )
    assert transition is not None
    assert transition.effects == (StopFetching(), StartFetching(2, 6, 17))


def test_leader_in_a_new_epoch_resets_leso_and_out_of_sync_followers() -> None:
    state = leader(isr=(0, 1))
    state = fetch(state, 1, 10, now=10).state
    state = fetch(state, 2, 4, now=10).state
    transition = apply_metadata(
        state, "t-0", 0, 10, PartitionMetadata((0, 1, 2), (0, 1), 0, 6, 9), 15, state.high_watermark, CONFIG, 50
    )
    assert transition is not None
    new = transition.state
    assert isinstance(new, Leader)
    assert new.leader_epoch_start_offset == 15
    assert new.follower(2).last_fetch_ms == -1 and new.follower(2).fetch_leader_epoch == -1
    assert new.follower(1).last_fetch_ms == 50 and new.follower(1).log_end_offset == 10  # in sync: kept
    # Out of sync follower 2 cannot join until it fetches in epoch 6 at or past the LESO.
    assert fetch(new, 2, 15, now=60, leader_epoch=5).proposal is None
    assert fetch(new, 2, 14, now=60, leader_epoch=6).proposal is None
    assert fetch(new, 2, 15, now=60, leader_epoch=6).proposal is not None


def test_same_epoch_metadata_commits_the_isr_and_may_advance_the_hwm() -> None:
    state = leader(isr=(0, 1, 2))
    state = fetch(state, 1, 10, now=10).state
    assert state.high_watermark == 0  # follower 2 has not fetched
    with capture_logs() as events:
        transition = apply_metadata(
            state, "t-0", 0, 10, PartitionMetadata((0, 1, 2), (0, 1), 0, 5, 8), 10, 0, CONFIG, 20
        )
    assert transition is not None and transition.state.high_watermark == 10
    assert [e["event"] for e in events] == ["isr_committed"]
    assert events[0]["isr"] == [0, 1] and events[0]["partition_epoch"] == 8


# ---- fetches, expansion and the HWM ----


def test_hwm_is_min_leo_over_the_isr() -> None:
    state = leader()
    state = fetch(state, 1, 8, now=1).state
    decision = fetch(state, 2, 6, now=2)
    assert decision.high_watermark_changed and decision.state.high_watermark == 6
    decision = fetch(decision.state, 2, 10, now=3)
    assert decision.state.high_watermark == 8


def test_hwm_waits_while_the_isr_is_below_min_insync_replicas() -> None:
    config = PartitionConfig(min_insync_replicas=3, replica_lag_time_max_ms=1000)
    state = leader(isr=(0, 1), config=config)
    decision = fetch(state, 1, 10, now=1)
    assert decision.state.high_watermark == 0 and not decision.high_watermark_changed


def test_min_isr_larger_than_rf_uses_rf() -> None:
    config = PartitionConfig(min_insync_replicas=5, replica_lag_time_max_ms=1000)
    state = leader(config=config)
    state = fetch(state, 1, 10, now=1).state
    assert fetch(state, 2, 10, now=1).state.high_watermark == 10


def test_expansion_needs_hwm_leso_current_epoch_and_matching_broker_epoch() -> None:
    state = leader(isr=(0, 1), leo=10)
    state = fetch(state, 1, 10, now=1).state
    assert state.high_watermark == 10
    assert fetch(state, 2, 9, now=2).proposal is None  # below the HWM
    assert fetch(state, 2, 10, now=2, leader_epoch=4).proposal is None  # fetched in another leader epoch
    newer = fetch(state, 2, 10, now=2, epoch=13)  # the metadata still shows epoch 12
    assert newer.error == ErrorCode.NONE and newer.proposal is None
    with capture_logs() as events:
        decision = fetch(state, 2, 10, now=2)
    proposal = decision.proposal
    assert proposal is not None
    assert proposal.new_isr_with_epochs == (BrokerState(0, 10), BrokerState(1, 11), BrokerState(2, 12))
    assert (proposal.leader_epoch, proposal.partition_epoch) == (5, 7)
    assert isinstance(decision.state.isr_state, PendingExpandIsr)
    assert events[0]["event"] == "isr_expand_proposed"
    assert events[0]["proposed_isr_with_epochs"] == [(0, 10), (1, 11), (2, 12)]
    # One AlterPartition in flight: no second proposal.
    assert fetch(decision.state, 2, 10, now=3).proposal is None


def test_pending_expand_counts_the_new_member_for_the_hwm() -> None:
    state = leader(isr=(0, 1), leo=10)
    state = fetch(state, 1, 10, now=1).state
    state = fetch(state, 2, 10, now=2).state
    assert isinstance(state.isr_state, PendingExpandIsr)
    state, _ = state.on_local_append(20, 3)
    state = fetch(state, 1, 20, now=3).state
    assert state.high_watermark == 10  # waits for 2 as well
    state = fetch(state, 2, 15, now=4).state
    assert state.high_watermark == 15


def test_the_hwm_waits_for_a_caught_up_follower_so_it_can_rejoin_under_steady_writes() -> None:
    """Kafka's shouldWaitForReplicaToJoinIsr: with min ISR 1 and writes arriving between its fetches, a follower
    out of the ISR fetches below the HWM every time unless the HWM waits for it once it has caught up."""
    state = leader(isr=(0,), leo=20, config=PartitionConfig(1, 1000), now=100)
    assert state.high_watermark == 20
    state = fetch(state, 1, 10, now=101).state  # behind
    state, _ = state.on_local_append(30, 102)
    assert state.high_watermark == 30
    decision = fetch(state, 1, 20, now=103)  # has what we had at its previous fetch: caught up, below the HWM
    assert decision.proposal is None
    state, _ = decision.state.on_local_append(40, 104)
    assert state.high_watermark == 30  # waits for the caught-up follower (before the fix: 40)
    decision = fetch(state, 1, 30, now=105)
    assert decision.proposal is not None and decision.proposal.isr == frozenset({0, 1})


def test_a_follower_the_hwm_waited_for_is_let_go_when_time_passes_or_it_is_fenced() -> None:
    """A follower caught up at its last fetch, then gone: without another append or fetch (a producer waits on
    this very HWM), only the clock or its fencing may release the HWM."""
    state = leader(isr=(0,), leo=20, config=PartitionConfig(1, 1000), now=100)
    state = fetch(state, 1, 10, now=101).state
    state, _ = state.on_local_append(30, 102)
    state = fetch(state, 1, 20, now=103).state  # caught up (what we had at its previous fetch), below the HWM
    state, _ = state.on_local_append(40, 104)
    assert state.high_watermark == 30  # waits for follower 1 to join
    same, moved = state.on_time_passed(900, EPOCHS)
    assert not moved and same.high_watermark == 30  # still caught up within replica.lag.time.max.ms
    later, moved = state.on_time_passed(1200, EPOCHS)
    assert moved and later.high_watermark == 40  # no longer caught up: the HWM goes on without it
    fenced, moved = state.on_time_passed(900, {b: e for b, e in EPOCHS.items() if b != 1})
    assert moved and fenced.high_watermark == 40  # fenced: not eligible to join


def test_an_idle_follower_at_the_leaders_log_end_stays_in_the_isr() -> None:
    """Kafka's isCaughtUp: a follower at the leader's log end is in sync however long ago it last fetched."""
    state = leader(leo=10, now=0)
    state = fetch(state, 1, 10, now=1).state
    state = fetch(state, 2, 10, now=1).state
    assert state.maybe_shrink_isr(60_000, EPOCHS)[1] is None


def test_a_fetch_with_an_older_broker_epoch_is_rejected_and_not_counted() -> None:
    state = leader()
    state = fetch(state, 1, 5, now=1).state
    with capture_logs() as events:
        decision = fetch(state, 1, 9, now=2, epoch=9)  # older than the metadata's 11
    assert decision.error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert decision.state.follower(1).log_end_offset == 5
    assert events == [
        {
            "partition": "t-0",
            "replica_id": 1,
            "expected_epoch": 11,
            "actual_epoch": 9,
            "event": "fetch_rejected_stale_broker_epoch",
            "log_level": "warning",
        }
    ]


def test_a_fetch_claiming_a_newer_epoch_than_the_metadata_does_not_lock_the_follower_out() -> None:
    """Only the metadata sets the bar: a forged Fetch with a huge epoch (before the fix, the highest epoch seen
    became the bar) must not make the real follower's fetches stale, nor let the forger join the ISR."""
    state = leader(isr=(0, 1))
    forged = fetch(state, 2, 10, now=1, epoch=2**40)
    assert forged.error == ErrorCode.NONE and forged.proposal is None  # not the metadata's epoch: no expansion
    real = fetch(forged.state, 2, 10, now=2)
    assert real.error == ErrorCode.NONE
    assert real.proposal is not None and real.proposal.isr == frozenset({0, 1, 2})


def test_unknown_replicas_and_offsets_past_our_leo_are_errors() -> None:
    state = leader(leo=10)
    assert state.on_follower_fetch(7, 1, 5, 0, EPOCHS, 1).error == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetch(state, 1, 11, now=1).error == ErrorCode.OFFSET_OUT_OF_RANGE


# ---- shrink ----


def test_shrink_after_replica_lag_time_max() -> None:
    state = leader(leo=10, now=0)
    state = fetch(state, 1, 10, now=500).state
    state = fetch(state, 2, 10, now=500).state
    state, _ = state.on_local_append(20, 500)
    state = fetch(state, 1, 20, now=900).state
    state = fetch(state, 2, 12, now=1400).state  # has what we had at its previous fetch (10): caught up at 500
    assert state.maybe_shrink_isr(1500, EPOCHS)[1] is None
    with capture_logs() as events:
        state, proposal = state.maybe_shrink_isr(1501, EPOCHS)
    assert proposal is not None and proposal.isr == frozenset({0, 1})
    assert isinstance(state.isr_state, PendingShrinkIsr) and state.isr_state.removing == frozenset({2})
    assert events[0]["event"] == "isr_shrink_proposed" and events[0]["lag_ms"] == {2: 1001}
    # PendingShrinkIsr keeps the old ISR for the HWM.
    assert state.maximal_isr == frozenset({0, 1, 2}) and state.high_watermark == 12


def test_isr_members_get_one_lag_period_after_a_new_leader() -> None:
    state = leader(now=1000)
    assert state.maybe_shrink_isr(2000, EPOCHS)[1] is None
    assert state.maybe_shrink_isr(2001, EPOCHS)[1] is not None


# ---- AlterPartition answers ----


def expanding() -> tuple[Leader, object]:
    state = leader(isr=(0, 1), leo=10)
    state = fetch(state, 1, 10, now=1).state
    decision = fetch(state, 2, 10, now=2)
    return decision.state, decision.proposal


def test_accepted_change_is_committed_with_the_controllers_partition_epoch() -> None:
    state, proposal = expanding()
    with capture_logs() as events:
        state, effects = state.on_alter_partition_response(
            proposal,
            AlterPartitionResult(ErrorCode.NONE, (0, 1, 2), 5, 8),  # type: ignore[arg-type]
            10,
        )
    assert effects == () and state.isr_state == Committed(frozenset({0, 1, 2})) and state.partition_epoch == 8
    assert events[0]["event"] == "isr_committed" and events[0]["partition_epoch"] == 8


def test_ineligible_replica_rolls_back_to_the_committed_isr() -> None:
    state, proposal = expanding()
    with capture_logs() as events:
        state, effects = state.on_alter_partition_response(
            proposal,
            AlterPartitionResult(ErrorCode.INELIGIBLE_REPLICA),  # type: ignore[arg-type]
            10,
        )
    assert effects == () and state.isr_state == Committed(frozenset({0, 1}))
    assert events[0] == {
        "partition": "t-0",
        "error": "INELIGIBLE_REPLICA",
        "proposed": [0, 1, 2],
        "committed": [0, 1],
        "event": "isr_rolled_back",
        "log_level": "info",
    }


@pytest.mark.parametrize("error", [ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION])
def test_stale_epochs_wait_for_new_metadata(error: ErrorCode) -> None:
    state, proposal = expanding()
    after, effects = state.on_alter_partition_response(proposal, AlterPartitionResult(error), 10)  # type: ignore[arg-type]
    assert effects == () and after.isr_state == state.isr_state  # no new proposal until metadata arrives
    assert fetch(after, 2, 10, now=5).proposal is None
    transition = apply_metadata(after, "t-0", 0, 10, PartitionMetadata((0, 1, 2), (0, 1), 0, 5, 9), 10, 10, CONFIG, 6)
    assert transition is not None and transition.state.isr_state == Committed(frozenset({0, 1}))


@pytest.mark.parametrize("error", [ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_CONTROLLER])
def test_unknown_outcomes_keep_the_pending_state_and_retry(error: ErrorCode) -> None:
    state, proposal = expanding()
    after, effects = state.on_alter_partition_response(proposal, AlterPartitionResult(error), 10)  # type: ignore[arg-type]
    assert effects == (SendAlterPartition(proposal),) and after.isr_state == state.isr_state  # type: ignore[arg-type]


def test_late_responses_lose_to_newer_metadata() -> None:
    state, proposal = expanding()
    transition = apply_metadata(
        state, "t-0", 0, 10, PartitionMetadata((0, 1, 2), (0, 1, 2), 0, 5, 9), 10, 10, CONFIG, 6
    )
    assert transition is not None
    state = transition.state
    assert isinstance(state, Leader)
    after, _ = state.on_alter_partition_response(
        proposal,
        AlterPartitionResult(ErrorCode.NONE, (0, 1), 5, 8),  # type: ignore[arg-type]
        10,
    )
    assert after is state
    rejected = AlterPartitionResult(ErrorCode.INELIGIBLE_REPLICA)
    assert after.on_alter_partition_response(proposal, rejected, 10)[0] is state  # type: ignore[arg-type]


# ---- produce ----


def test_acks_all_needs_min_insync_replicas() -> None:
    state = leader(isr=(0,))
    with capture_logs() as events:
        assert state.check_produce(-1) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert events[0]["expected_min_isr"] == 2 and events[0]["actual_isr"] == [0]
    assert state.check_produce(1) == ErrorCode.NONE and state.check_produce(0) == ErrorCode.NONE
    # min.insync.replicas is capped at the replication factor (Kafka's effectiveMinIsr): RF 1 with min ISR 2.
    alone = make_leader("t-0", 0, 10, PartitionMetadata((0,), (0,), 0, 5, 7), 0, 0, CONFIG, 0).state
    assert isinstance(alone, Leader) and alone.check_produce(-1) == ErrorCode.NONE


# ---- reads and offsets ----


def test_leader_epoch_checks_fence_old_and_unknown_epochs_and_let_unknown_requesters_through() -> None:
    state = leader()
    assert state.check_current_leader_epoch(5) == ErrorCode.NONE
    assert state.check_current_leader_epoch(-1) == ErrorCode.NONE
    assert state.check_current_leader_epoch(4) == ErrorCode.FENCED_LEADER_EPOCH
    assert state.check_current_leader_epoch(6) == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_latest_offset_is_not_available_while_a_new_leaders_hwm_lags_its_epoch_start() -> None:
    """A new leader's HWM may lag the old one's; answering it would let "latest" go back (Kafka answers
    OFFSET_NOT_AVAILABLE until the HWM reaches the leader epoch start offset)."""
    state = leader(leo=10, hwm=4)  # LESO 10, HWM 4: the followers have not fetched in this epoch yet
    assert state.latest_offset(5).error == ErrorCode.OFFSET_NOT_AVAILABLE
    assert state.latest_offset(4).error == ErrorCode.FENCED_LEADER_EPOCH
    state = fetch(state, 1, 10, now=1).state
    state = fetch(state, 2, 10, now=1).state
    assert state.high_watermark == 10
    assert state.latest_offset(5) == ListedOffset(ErrorCode.NONE, 10, 5)
    assert state.latest_offset(-1) == ListedOffset(ErrorCode.NONE, 10, 5)


def test_consumers_read_only_below_the_hwm() -> None:
    state = leader(leo=10, hwm=4)
    assert state.consumer_read(2, 0, 5).read_below == 4
    assert state.consumer_read(4, 0, 5).read_below is None and state.consumer_read(4, 0, 5).error == ErrorCode.NONE
    assert state.consumer_read(11, 0, 5).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert state.consumer_read(2, 3, 5).error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert state.consumer_read(2, 0, 4).error == ErrorCode.FENCED_LEADER_EPOCH


def test_out_of_range_recovery_starts_over_behind_the_log_start_and_cuts_back_ahead_of_the_hwm() -> None:
    """Kafka's handleOutOfRangeError, decided by the follower core."""
    follower = make_follower("t-0", 1, PartitionMetadata((0, 1), (0, 1), 0, 3, 3), 10, 5).state
    assert isinstance(follower, Follower)
    assert follower.out_of_range_recovery(10, 50, 80) == OutOfRangeRecovery(start_at=50)
    assert follower.out_of_range_recovery(90, 0, 80) == OutOfRangeRecovery(truncate_to=80)
    assert follower.out_of_range_recovery(60, 50, 80) is None  # within the leader's range now: fetch again


def test_a_leader_after_an_unclean_election_reports_recovered_with_its_first_isr_change_and_not_before() -> None:
    """Kafka's makeLeader marks a RECOVERING partition RECOVERED locally and sends nothing for that: the controller
    learns RECOVERED from the new leader's next AlterPartition, here the first follower caught up joining."""
    config = PartitionConfig(min_insync_replicas=1, replica_lag_time_max_ms=1000)
    unclean = PartitionMetadata((0, 1, 2), (0,), 0, 6, 8, LeaderRecoveryState.RECOVERING)
    with capture_logs() as events:
        transition = make_leader("t-0", 0, 10, unclean, 10, 4, config, now_ms=0)
    assert events[0]["event"] == "become_leader" and events[0]["leader_recovery_state"] == "RECOVERING"
    assert transition.effects == (StopFetching(), AssignEpochStartOffset(6, 10))
    state = transition.state
    assert isinstance(state, Leader) and state.high_watermark == 10
    decision = state.on_follower_fetch(1, EPOCHS[1], 6, 10, EPOCHS, 1)
    proposal = decision.proposal
    assert proposal is not None and proposal.isr == {0, 1}
    assert proposal.leader_recovery_state is LeaderRecoveryState.RECOVERED
    assert (proposal.leader_epoch, proposal.partition_epoch) == (6, 8)


def test_a_dynamic_min_isr_change_gates_the_hwm_at_once() -> None:
    from minikafka.broker.replica.partition import reconfigure

    metadata = PartitionMetadata((1, 2), (1,), 1, 0, 0)
    config = PartitionConfig(min_insync_replicas=2, strict_min_isr=True)
    leader = make_leader("t-0", 1, 1, metadata, 5, 0, config, 0).state
    assert isinstance(leader, Leader) and leader.high_watermark == 0  # ISR [1] below min ISR 2: the HWM waits
    lowered, moved = reconfigure(leader, PartitionConfig(min_insync_replicas=1, strict_min_isr=True), 10)
    assert moved and lowered.high_watermark == 5 and lowered.check_produce(-1) == ErrorCode.NONE
    raised, moved = reconfigure(lowered, config, 20)
    assert not moved and raised.check_produce(-1) == ErrorCode.NOT_ENOUGH_REPLICAS


def test_an_idle_fetch_vouched_by_a_session_counts_as_caught_up_only_at_the_log_end() -> None:
    state = ReplicaState(1).on_fetch(5, 5, 10, 1, now_ms=1000)
    idle = state.on_idle_fetch(5, 9000)
    assert (idle.last_fetch_ms, idle.last_caught_up_ms, idle.log_end_offset) == (9000, 9000, 5)
    assert idle.on_idle_fetch(5, 8000) is idle  # an older session's Fetch teaches nothing
    assert state.on_idle_fetch(7, 9000) is state  # not at our log end: no session holds it settled


def test_a_follower_the_leader_asked_to_add_to_the_isr_is_settled_at_the_log_end_until_the_answer() -> None:
    state = leader(isr=(0, 1), leo=10)
    state = fetch(state, 1, 10, now=1).state
    assert not fetch(state, 2, 9, now=2).state.follower_settled(2, EPOCHS)  # out of the ISR and behind
    state = fetch(state, 2, 10, now=2).state
    assert isinstance(state.isr_state, PendingExpandIsr) and state.follower_settled(2, EPOCHS)
    state, _ = state.on_local_append(11, 3)
    assert not state.follower_settled(2, EPOCHS)  # behind again: its Fetches are read
    pending, proposal = expanding()
    assert pending.follower_settled(2, EPOCHS)
    rolled_back, _ = pending.on_alter_partition_response(
        proposal,  # type: ignore[arg-type]
        AlterPartitionResult(ErrorCode.INELIGIBLE_REPLICA),  # type: ignore[arg-type]
        5,
    )
    # Eligible in the metadata, out of the committed ISR: each Fetch is read, and may propose it again.
    assert rolled_back.isr_state == Committed(frozenset({0, 1})) and not rolled_back.follower_settled(2, EPOCHS)


def test_a_follower_at_the_log_end_that_may_not_join_the_isr_is_settled_until_it_may() -> None:
    fenced = {broker: epoch for broker, epoch in EPOCHS.items() if broker != 2}
    state = leader(isr=(0, 1), leo=10)
    decision = state.on_follower_fetch(2, EPOCHS[2], 5, 10, fenced, 2)  # broker 2 is fenced in the metadata
    assert decision.proposal is None
    assert decision.state.follower_settled(2, fenced)  # nothing to decide until the metadata changes
    assert not decision.state.follower_settled(2, EPOCHS)  # unfenced: its next Fetch is read and proposes it
    assert fetch(decision.state, 2, 10, now=3).proposal is not None


def test_a_follower_whose_broker_registered_again_is_not_settled_on_its_old_epoch() -> None:
    """Broker 2 fetched at its epoch and was out of the committed ISR (here: its expansion refused); then it registered
    again (a retried registration gave it a new epoch) and the metadata shows that epoch. Its state still holds the
    old one, so it may not join, but its next Fetch, of the new epoch, must be read to propose it: settling it made
    an idle partition's ISR never expand again (seed 930063 of a simulated search with duplicated requests)."""
    pending, proposal = expanding()
    rolled_back, _ = pending.on_alter_partition_response(
        proposal,  # type: ignore[arg-type]
        AlterPartitionResult(ErrorCode.INELIGIBLE_REPLICA),  # type: ignore[arg-type]
        5,
    )
    registered_again = {**EPOCHS, 2: EPOCHS[2] + 8}
    assert not rolled_back.follower_settled(2, registered_again)
    assert rolled_back.follower_settled(2, {**EPOCHS, 2: EPOCHS[2] - 1})  # the metadata behind: its change reads it
    newer = rolled_back.on_follower_fetch(2, registered_again[2], 5, rolled_back.log_end_offset, registered_again, 9)
    assert newer.proposal is not None
