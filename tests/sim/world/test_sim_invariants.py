"""The world's checks of `analyze`'s invariants (LogMatching, MetadataLogMatching, IsrNeverEmpty,
LeaderInIsrAndReplicas, ElrMembersComplete, NoStaleBrokerEpochInIsr, OneLeaderPerLeaderEpoch, EpochsMonotonic,
HighWatermarkMonotonic, LastStableOffsetMonotonic) on the nodes' events
and logs: each one holds on what a correct run logs and breaks on what a broken one does, on events shaped as the
nodes log them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from minikafka.sim.event_invariants import EventInvariants
from minikafka.sim.invariants import BatchHeader, Invariants, PartitionReplica, log_matching
from minikafka.sim.world import SimulationSettings, simulate_seed

TOPIC_ID = "t-id"
CONTROLLERS = frozenset({101, 102, 103})


def changed(offset: int, leader: int, isr: list[int], leader_epoch: int, partition_epoch: int, **more: Any) -> Any:
    return {
        "event": "partition_changed",
        "offset": offset,
        "topic": "sim",
        "topic_id": TOPIC_ID,
        "partition": 0,
        "leader": leader,
        "isr": isr,
        "elr": more.pop("elr", []),
        "last_known_elr": more.pop("last_known_elr", []),
        "replicas": more.pop("replicas", [1, 2, 3]),
        "leader_epoch": leader_epoch,
        "partition_epoch": partition_epoch,
        "reason": more.pop("reason", "alter_partition"),
    }


def registered(offset: int, broker: int, broker_epoch: int) -> Any:
    return {"event": "broker_registered", "offset": offset, "broker_id": broker, "broker_epoch": broker_epoch}


def starting(previous_broker_epoch: int) -> Any:
    return {"event": "broker_starting", "previous_broker_epoch": previous_broker_epoch}


def feed(events: list[tuple[int | None, Any]]) -> list[str]:
    checks = EventInvariants(CONTROLLERS)
    for node, event in events:
        checks.observe(node, 1, event)
        if node is None:
            checks.observe(102, 1, event)  # a controller replaying the same record: only compared with the first
    return [v.invariant for v in checks.violations]


def test_metadata_replayed_by_every_controller_is_checked_once_and_a_correct_history_holds() -> None:
    assert (
        feed(
            [
                (None, registered(1, 1, 1)),
                (None, registered(2, 2, 2)),
                (None, changed(3, 1, [1, 2], 0, 0, reason="create")),
                (None, changed(4, 2, [2], 1, 1, reason="fence")),
                (None, changed(5, 2, [1, 2], 1, 2)),
            ]
        )
        == []
    )


def test_two_controllers_replaying_different_records_at_one_offset_break_metadata_log_matching() -> None:
    created = changed(3, 1, [1, 2], 0, 0, reason="create")
    assert feed([(101, created), (102, created), (103, created)]) == []
    assert feed([(101, created), (103, {**created, "leader": 2, "isr": [2, 1]})]) == ["MetadataLogMatching"]
    assert feed([(101, created), (102, registered(3, 2, 3))]) == ["MetadataLogMatching"]
    config = {"event": "topic_config_changed", "offset": 4, "topic": "sim", "name": "retention.ms", "value": "1000"}
    assert feed([(101, config), (102, config)]) == []
    assert feed([(101, config), (102, {**config, "value": "2000"})]) == ["MetadataLogMatching"]


def test_the_raft_layers_events_at_an_offset_and_a_brokers_are_no_metadata_replays() -> None:
    created = changed(3, 1, [1, 2], 0, 0, reason="create")
    voters = {"event": "raft_voter_set_changed", "offset": 3, "voters": [101, 102]}
    assert feed([(101, created), (102, voters), (2, {**created, "leader": 2})]) == []


def test_an_empty_isr_breaks_isr_never_empty_unless_an_elr_names_who_may_lead() -> None:
    created = (None, changed(3, 1, [1, 2], 0, 0, reason="create"))
    assert feed([created, (None, changed(4, -1, [], 1, 1))]) == ["IsrNeverEmpty"]
    assert feed([created, (None, changed(4, -1, [], 1, 1, elr=[1]))]) == []
    assert feed([created, (None, changed(4, -1, [], 1, 1, last_known_elr=[1]))]) == []


def test_a_leader_outside_its_isr_or_replicas_breaks_leader_in_isr_and_replicas() -> None:
    assert feed([(None, changed(3, 1, [2], 0, 0))]) == ["LeaderInIsrAndReplicas"]
    assert feed([(None, changed(3, 4, [4], 0, 0))]) == ["LeaderInIsrAndReplicas"]
    assert feed([(None, changed(3, 1, [1, 4], 0, 0))]) == ["LeaderInIsrAndReplicas"]
    assert feed([(None, changed(3, -1, [2], 0, 0))]) == []


def test_two_leaders_committed_in_one_leader_epoch_break_one_leader_per_leader_epoch() -> None:
    assert feed([(None, changed(3, 1, [1, 2], 0, 0)), (None, changed(4, 2, [2], 0, 1))]) == ["OneLeaderPerLeaderEpoch"]


def test_a_broker_leading_an_epoch_the_metadata_gave_another_breaks_one_leader_per_leader_epoch() -> None:
    leading = {"event": "become_leader", "partition": "sim-0", "leader_epoch": 0, "partition_epoch": 0}
    assert feed([(2, leading), (None, changed(3, 1, [1, 2], 0, 0))]) == ["OneLeaderPerLeaderEpoch"]


def test_a_partition_epoch_that_does_not_increase_breaks_epochs_monotonic() -> None:
    assert feed([(None, changed(3, 1, [1, 2], 0, 0)), (None, changed(4, 1, [1], 0, 0))]) == ["EpochsMonotonic"]


def test_a_broker_adopting_an_older_leader_epoch_breaks_epochs_monotonic() -> None:
    follow = {"event": "become_follower", "partition": "sim-0", "partition_epoch": 3}
    assert feed([(1, {**follow, "leader_epoch": 2}), (1, {**follow, "leader_epoch": 1})]) == ["EpochsMonotonic"]


def test_a_topic_deleted_and_created_again_starts_its_epochs_over_as_analyze_compares_them() -> None:
    """Within one topic id, as analyze's EpochsMonotonic: the re-created topic's first record is epoch 0 again, and
    a broker that deleted the old log adopts the new topic's epoch 0."""
    old = [(None, changed(3, 2, [2, 3], 0, 0, reason="create")), (None, changed(4, 2, [2], 0, 1))]
    recreated = {**changed(6, 2, [2, 3], 0, 0, reason="create"), "topic_id": "new-id"}
    deleted = {"event": "log_deleted", "partition": "sim-0", "topic_id": TOPIC_ID}
    lead = {"event": "become_leader", "partition": "sim-0", "leader_epoch": 0}
    adopted = [(2, {**lead, "partition_epoch": 1}), (2, deleted), (2, {**lead, "partition_epoch": 0})]
    assert feed([*old, *adopted[:1], (None, recreated), *adopted[1:]]) == []


def test_an_isr_member_admitted_with_an_old_broker_epoch_breaks_no_stale_broker_epoch_in_isr() -> None:
    accepted = {
        "event": "alter_partition_accepted",
        "changed": True,
        "topic_id": TOPIC_ID,
        "partition": 0,
        "partition_epoch": 1,
        "isr": [1, 2],
        "proposed_isr": [[1, 1], [2, 2]],
    }
    history = [(None, registered(1, 1, 1)), (None, registered(2, 2, 2)), (None, registered(3, 2, 3))]
    assert feed([*history, (103, accepted), (None, changed(4, 1, [1, 2], 0, 1))]) == ["NoStaleBrokerEpochInIsr"]
    current = {**accepted, "proposed_isr": [[1, 1], [2, 3]]}
    assert feed([*history, (103, current), (None, changed(4, 1, [1, 2], 0, 1))]) == []


def test_an_uncleanly_restarted_broker_in_an_elr_before_it_rejoined_an_isr_breaks_elr_members_complete() -> None:
    before = [
        (None, registered(1, 2, 1)),
        (None, changed(2, 1, [1, 2], 0, 0, reason="create")),
        (None, changed(3, 1, [1], 0, 1, elr=[2])),
    ]
    again = (None, registered(4, 2, 4))
    listed = (None, changed(5, 1, [1], 0, 2, elr=[2]))
    assert feed([*before, (2, starting(-1)), again, listed]) == ["ElrMembersComplete"]
    # after a clean shutdown it may stay; after an unclean one, once it is back in an ISR
    assert feed([*before, (2, starting(1)), again, listed]) == []
    rejoined = [(None, changed(5, 1, [1, 2], 0, 2)), (None, changed(6, 1, [1], 0, 3, elr=[2]))]
    assert feed([*before, (2, starting(-1)), again, *rejoined]) == []


def test_a_leader_high_watermark_going_back_in_its_epoch_breaks_high_watermark_monotonic() -> None:
    advanced = {"event": "high_watermark_advanced", "partition": "sim-0", "leader_epoch": 1}
    assert feed([(1, {**advanced, "high_watermark": 10}), (1, {**advanced, "high_watermark": 7})]) == [
        "HighWatermarkMonotonic"
    ]
    assert (
        feed([(1, {**advanced, "high_watermark": 10}), (1, {**advanced, "high_watermark": 7, "leader_epoch": 2})]) == []
    )


def test_a_topic_deleted_and_created_again_is_checked_apart_from_the_old_one() -> None:
    """The new topic's leader epoch 0 has another leader than the old one's, and its leader's HWM starts at 0 again:
    no violation. Within the new topic, a second leader in its epoch 0 still breaks OneLeaderPerLeaderEpoch."""
    role = {"partition": "sim-0", "leader_epoch": 0, "partition_epoch": 0}
    advanced = {"event": "high_watermark_advanced", "partition": "sim-0", "leader_epoch": 0}
    deleted = {"event": "log_deleted", "partition": "sim-0", "topic_id": TOPIC_ID, "reason": "topic deleted"}
    recreated = {**changed(6, 2, [2, 1], 0, 0, reason="create"), "topic_id": "new-id"}
    history = [
        (None, changed(3, 1, [1, 2], 0, 0, reason="create")),
        (1, {"event": "become_leader", **role}),
        (2, {"event": "become_follower", **role}),
        (1, {**advanced, "high_watermark": 10}),
        (1, deleted),
        (2, deleted),
        (None, recreated),
        (2, {"event": "become_leader", **role}),
        (1, {"event": "become_follower", **role}),
        (2, {**advanced, "high_watermark": 3}),
    ]
    assert feed(history) == []
    after_deletion = [*history[:6], (None, recreated), (1, {**advanced, "high_watermark": 3})]
    assert feed(after_deletion) == []
    assert feed([*history, (1, {"event": "become_leader", **role})]) == ["OneLeaderPerLeaderEpoch"] * 2


def replica(broker: int, batches: list[BatchHeader], high_watermark: int, leads: bool = False, hwm: int = -1) -> Any:
    end = batches[-1].last_offset + 1 if batches else 0
    return PartitionReplica(
        broker,
        0,
        leads,
        1,
        hwm,
        end,
        lambda _start, _end: {},
        0,
        high_watermark,
        lambda start, stop: [b for b in batches if b.base_offset >= start and b.last_offset < stop],
    )


def test_replicas_differing_below_both_high_watermarks_break_log_matching() -> None:
    common = [BatchHeader(0, 4, 0, 11), BatchHeader(5, 9, 0, 12)]
    diverged = [BatchHeader(0, 4, 0, 11), BatchHeader(5, 9, 1, 99)]
    assert log_matching([replica(1, common, 10), replica(2, common, 10)], {}) is None
    # the tails differ above one replica's high watermark: nothing committed differs
    assert log_matching([replica(1, common, 10), replica(2, diverged, 5)], {}) is None
    broken = log_matching([replica(1, common, 10), replica(2, diverged, 10)], {})
    assert broken is not None and broken.invariant == "LogMatching"


def test_a_leader_high_watermark_polled_lower_in_its_epoch_breaks_high_watermark_monotonic() -> None:
    checks = Invariants()
    assert checks.check([replica(1, [], 0, leads=True, hwm=10)], []) is None
    broken = checks.check([replica(1, [], 0, leads=True, hwm=7)], [])
    assert broken is not None and broken.invariant == "HighWatermarkMonotonic"


def test_a_leader_elected_short_is_caught_though_its_log_grew_before_the_check_saw_it() -> None:
    """LeaderCandidateCompleteness reads the log the leader took its epoch with (its epoch's start), as `analyze`
    reads `become_leader`'s leader_epoch_start_offset: by the first check that sees a new leader, it may have taken
    on enough to pass the old high watermark."""
    checks = Invariants()
    assert checks.check([replica(1, [BatchHeader(0, 9, 0, 1)], 10, leads=True, hwm=10)], []) is None
    grown = [BatchHeader(0, 3, 0, 1), BatchHeader(4, 19, 2, 2)]
    elected_at_4 = replace(replica(2, grown, 20, leads=True, hwm=20), leader_epoch=2, epoch_start_offset=4)
    broken = Invariants(high_watermarks=dict(checks.high_watermarks)).check([elected_at_4], [])
    assert broken is not None and broken.invariant == "LeaderCandidateCompleteness"
    assert "ending at 4 when it took the epoch" in broken.detail
    elected_at_10 = replace(elected_at_4, epoch_start_offset=10)
    assert Invariants(high_watermarks=dict(checks.high_watermarks)).check([elected_at_10], []) is None


# ---- on the simulated cluster: a planted bug each check exists for is caught ----

ISOLATE_LEADER = {"duration_s": 30.0, "faults": ("isolate-leader",)}


def test_a_new_leader_committed_in_its_predecessors_leader_epoch_is_caught() -> None:
    result = simulate_seed(SimulationSettings(1, planted_bug="leader-change-keeps-leader-epoch", **ISOLATE_LEADER))
    assert result.violation is not None and result.violation.invariant == "OneLeaderPerLeaderEpoch", result.trace


def test_a_partition_change_keeping_its_partition_epoch_is_caught() -> None:
    result = simulate_seed(SimulationSettings(1, planted_bug="partition-epoch-not-bumped", **ISOLATE_LEADER))
    assert result.violation is not None and result.violation.invariant == "EpochsMonotonic", result.trace


def test_a_corrupted_replica_is_looked_at_without_taking_its_log_dir_offline() -> None:
    """`corrupt` flips a bit in one replica of each partition; the invariants read the segments as they are, so the
    world's own reads find no CRC error for the broker to act on: every broker stays up, every invariant holds."""
    result = simulate_seed(SimulationSettings(1, duration_s=30.0, faults=("corrupt",)))
    assert result.violation is None, "\n".join(result.trace)
    corrupted = [line for line in result.trace if "sim_step corrupt: broker" in line and "batch at offset" in line]
    assert len(corrupted) >= 3
    assert not any("sim_node_exited" in line for line in result.trace)


def test_a_last_stable_offset_going_back_or_above_the_high_watermark_breaks_its_monotonicity() -> None:
    advanced = {"event": "high_watermark_advanced", "partition": "sim-txn-0", "leader_epoch": 1}
    assert feed([(1, {**advanced, "high_watermark": 10, "last_stable_offset": 8})]) == []
    went_back = [(1, {**advanced, "high_watermark": 10, "last_stable_offset": 8}), (1, {**advanced,
                 "high_watermark": 12, "last_stable_offset": 6})]  # fmt: skip
    assert feed(went_back) == ["LastStableOffsetMonotonic"]
    assert feed([(1, {**advanced, "high_watermark": 10, "last_stable_offset": 11})]) == ["LastStableOffsetMonotonic"]
