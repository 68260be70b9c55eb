"""The scripted stories on the simulated cluster (the shipped nodes), each with its guard on and off: guarded, every
invariant holds and nothing acknowledged is lost; with the guard off (its real config key, or the bug it prevents
planted) the new leader is short and acknowledged writes are lost, or the harm the scenario it ports shows happens
(a zombie's acks=1 writes lost, a fenced leader that never steps down, a needless KRaft election, stray logs kept, a
read_committed reader stalled or reading an aborted record), so each check is shown able to fail."""

from __future__ import annotations

import re
import shlex

import pytest

from minikafka.cli import main
from minikafka.sim.authorization_stories import STOLEN_PRODUCER_ID
from minikafka.sim.isolation_stories import PARTITIONED_BROKER, ZOMBIE_LEADER
from minikafka.sim.quorum_stories import DISRUPTIVE_CONTROLLER
from minikafka.sim.stories import (
    CONTROLLER_DISK_LOSS,
    IN_FLIGHT_ALTER_PARTITION,
    KIP_903,
    LAST_REPLICA_STANDING,
    LOST_ALTER_PARTITION_ANSWER,
    MIN_ISR_AGREEMENT,
    NEW_LEADER_EPOCH,
    PENDING_ISR_EXPANSION,
    PENDING_ISR_SHRINK,
    RAFT_POWER_LOSS,
    STORIES,
    UNCLEAN_ELECTION,
)
from minikafka.sim.story_steps import Story, run_story
from minikafka.sim.stray_partition_stories import STRAY_PARTITIONS
from minikafka.sim.transaction_stories import DELAYED_END_TXN, HANGING_TRANSACTION
from minikafka.sim.world import SimulationResult

LOST_LEADER = ["LeaderCandidateCompleteness", "NoCommittedRecordLost"]


def run(story: Story, guarded: bool) -> SimulationResult:
    result = run_story(story, guarded)
    stalled = [v for v in result.violations if v.invariant == "StoryStalled"]
    assert not stalled, "\n".join(result.trace)
    return result


def invariants(result: SimulationResult) -> list[str]:
    return [v.invariant for v in result.violations]


def test_kip_903_with_the_broker_epoch_check_the_stale_request_is_refused_and_nothing_is_lost() -> None:
    result = run(KIP_903, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["rejected"] == ["INELIGIBLE_REPLICA"] and seen["isr_after_stale_request"] == [1]
    # A is the last replica standing: no leader while it is down, and A (KIP-966) in the ELR.
    assert seen["while_a_down"] == {"leader": -1, "isr": [], "elr": [1]}
    assert seen["acknowledged_alone"] == 200 and seen["lost"] == 0


def test_kip_903_without_the_check_the_wiped_broker_leads_and_every_acknowledged_write_is_lost() -> None:
    result = run(KIP_903, guarded=False)
    # analyze's KIP-903 check sees the stale epoch committed before the short leader is elected
    assert invariants(result) == ["NoStaleBrokerEpochInIsr", *LOST_LEADER]
    seen = result.observed
    assert seen["rejected"] == [] and seen["isr_after_stale_request"] == [1, 2]
    assert seen["while_a_down"]["leader"] == 2  # B, with its wiped disk, elected from the ISR
    assert seen["acknowledged_alone"] == 200 and seen["lost"] == 200


def test_with_unclean_election_off_the_partition_waits_leaderless_for_the_elr_member_and_loses_nothing() -> None:
    result = run(UNCLEAN_ELECTION, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["with_only_out_of_sync"] == {"leader": -1, "isr": [], "elr": [1]} and seen["elected"] == []
    assert seen["leader_after"] == 1 and seen["acknowledged_alone"] == 40 and seen["lost"] == 0


def test_unclean_election_elects_the_out_of_sync_replica_and_loses_what_only_the_isr_had() -> None:
    """The loss Kafka documents as the price of unclean.leader.election.enable=true."""
    result = run(UNCLEAN_ELECTION, guarded=False)
    assert invariants(result) == LOST_LEADER
    seen = result.observed
    assert seen["with_only_out_of_sync"] == {"leader": 2, "isr": [2], "elr": []}
    assert seen["elected"] == [[2, "unfence"]] and seen["leader_after"] == 2
    assert seen["acknowledged_alone"] == 40 and seen["lost"] == 40


def test_a_late_alter_partition_at_an_older_partition_epoch_is_refused_and_nothing_is_lost() -> None:
    result = run(IN_FLIGHT_ALTER_PARTITION, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["partition_epochs"] == [1, 2]  # the reordering of the replicas, after the request was computed
    assert seen["rejected"] == ["INVALID_UPDATE_VERSION"] and seen["isr_after_stale_request"] == [1, 2]
    assert seen["leader_after_a_stops"] == 2 and seen["acknowledged_without_late"] == 200 and seen["lost"] == 0


def test_without_the_partition_epoch_check_the_stale_isr_elects_the_replica_that_lacks_the_writes() -> None:
    result = run(IN_FLIGHT_ALTER_PARTITION, guarded=False)
    assert invariants(result) == LOST_LEADER
    seen = result.observed
    assert seen["rejected"] == [] and seen["isr_after_stale_request"] == [1, 2, 3]
    assert seen["leader_after_a_stops"] == 3  # first in replica order [1, 3, 2] among the ISR
    assert seen["acknowledged_without_late"] == 200 and seen["lost"] == 200


def test_last_replica_standing_with_elr_version_1_elects_the_clean_elr_member_and_loses_nothing() -> None:
    result = run(LAST_REPLICA_STANDING, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["elr_with_leader_alone"] == [2] and seen["acknowledged_alone"] == 0  # NOT_ENOUGH_REPLICAS
    assert seen["leader_after"] == 2 and seen["acknowledged_before"] == 100 and seen["lost"] == 0
    # The controller told the followers' clean stops from the leader's power loss.
    assert sorted(seen["shutdowns_detected"]) == [[1, False], [2, True], [3, True]]
    # no leader once the leader was fenced; then broker 2 from the ELR, once it was unfenced
    assert seen["elected_after_power_loss"] == [[-1, "fence:session_timeout"], [2, "unfence"]]


def test_last_replica_standing_with_elr_version_0_loses_the_acknowledged_writes() -> None:
    result = run(LAST_REPLICA_STANDING, guarded=False)
    assert invariants(result) == LOST_LEADER
    seen = result.observed
    assert seen["elr_with_leader_alone"] == [] and seen["acknowledged_alone"] == 0
    assert seen["leader_after"] == 1  # the ISR it never left elected it, with the log its power loss left
    assert [1, "unfence"] in seen["elected_after_power_loss"]
    assert seen["acknowledged_before"] == 100 and seen["lost"] == 100


def test_a_broker_min_isr_below_the_controllers_loses_no_write_to_an_elr_election() -> None:
    result = run(MIN_ISR_AGREEMENT, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    # The active controller wrote its min ISR as the cluster default; the leader refused acks=all with it.
    assert seen["cluster_min_isr"] == "2" and seen["acknowledged_alone"] == 0
    assert seen["elr_with_leader_alone"] == [2] and seen["leader_after"] == 2 and seen["lost"] == 0


def test_without_the_cluster_min_isr_record_the_elr_election_loses_what_the_leader_acknowledged() -> None:
    result = run(MIN_ISR_AGREEMENT, guarded=False)
    assert invariants(result) == LOST_LEADER
    seen = result.observed
    assert seen["cluster_min_isr"] is None and seen["acknowledged_alone"] == 5 and seen["lost"] == 5


def test_a_new_leader_caches_its_epoch_and_the_follower_keeps_its_committed_records() -> None:
    result = run(NEW_LEADER_EPOCH, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["new_leader_log_end"] == 10  # elected in epoch 2 with nothing appended in it
    assert seen["follower_log_end"] == 10 and seen["lost"] == 0  # only the unacknowledged offset 10 was cut


def test_without_the_cached_epoch_the_follower_wipes_its_log_and_acknowledged_writes_are_lost() -> None:
    result = run(NEW_LEADER_EPOCH, guarded=False)
    assert invariants(result) == LOST_LEADER
    seen = result.observed
    assert seen["follower_log_end"] == 0 and seen["acknowledged"] == 10 and seen["lost"] == 10


# The leader's ISR core broken three ways (each a planted bug): while an ISR change is pending, or its outcome
# unknown, the HWM must count every replica the ISR may hold; counting fewer acknowledges writes a replica the
# controller keeps in the ISR lacks, and it is then elected.
ISR_CORE = [
    (PENDING_ISR_EXPANSION, "acknowledged_while_pending"),
    (PENDING_ISR_SHRINK, "acknowledged_while_pending"),
    (LOST_ALTER_PARTITION_ANSWER, "acknowledged_after_unknown_outcome"),
]
ISR_CORE_IDS = [story.switch.key for story, _ in ISR_CORE]


@pytest.mark.parametrize(("story", "acknowledged"), ISR_CORE, ids=ISR_CORE_IDS)
def test_the_isr_core_counts_every_replica_the_isr_may_hold(story: Story, acknowledged: str) -> None:
    result = run(story, guarded=True)
    assert invariants(result) == [], result.trace
    assert result.observed[acknowledged] == 0 and result.observed["lost"] == 0
    assert result.observed.get("answer", "REQUEST_TIMED_OUT") == "REQUEST_TIMED_OUT"  # the outcome was unknown


@pytest.mark.parametrize(("story", "acknowledged"), ISR_CORE, ids=ISR_CORE_IDS)
def test_the_invariants_catch_a_broken_isr_core(story: Story, acknowledged: str) -> None:
    result = run(story, guarded=False)
    assert invariants(result) == LOST_LEADER
    assert result.observed[acknowledged] == 5 and result.observed["lost"] == 5


@pytest.mark.parametrize("name", sorted(STORIES))
def test_a_story_replays_to_the_same_trace(name: str) -> None:
    first, again = run_story(STORIES[name], guarded=True), run_story(STORIES[name], guarded=True)
    assert first.trace_hash == again.trace_hash


# stray-partitions: a new topic id (random) in the violation it prints, the same in the replay
@pytest.mark.parametrize(
    "story", [UNCLEAN_ELECTION, IN_FLIGHT_ALTER_PARTITION, STRAY_PARTITIONS], ids=lambda story: story.name
)
def test_a_guard_off_story_prints_a_replay_command_that_reproduces_its_trace_hash(
    story: Story, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", "--story", story.name, "--guard", "off"]) == 0  # the loss found, as predicted
    out = capsys.readouterr().out
    found = re.search(r"  trace (\w+); replay with: (.*)\n", out)
    assert found is not None, out
    first_hash, command = found.groups()
    assert command == f"minikafka simulate --story {story.name} --guard off --first-seed 1"
    assert main(shlex.split(command)[1:]) == 0  # the replay: the same trace hash again
    assert f"trace {first_hash}; replay with: {command}" in capsys.readouterr().out


def test_raft_a_leaders_power_loss_keeps_what_it_counted_committed() -> None:
    result = run(RAFT_POWER_LOSS, guarded=True)
    assert invariants(result) == [], result.trace
    # the entries the lagging controller lacks keep the restarted leader's vote from it: it does not lead
    assert result.observed["entries_c_lacks"] > 0
    assert result.observed["raft_leader_while_f_cut_off"] != result.observed["lagging_controller"]


def test_raft_entries_counted_before_their_fsync_are_lost_with_the_leaders_power() -> None:
    result = run(RAFT_POWER_LOSS, guarded=False)
    assert invariants(result) == ["LeaderHasAllAckedValues"]
    assert result.observed["raft_leader_while_f_cut_off"] == result.observed["lagging_controller"]


def test_a_wiped_controller_in_a_dynamic_quorum_refuses_to_vote_and_the_committed_topic_survives() -> None:
    result = run(CONTROLLER_DISK_LOSS, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["topic_committed"] and seen["leader_while_l_down"] is None and seen["topic_survived"]
    assert seen["voter_replaced"] == "removed under its old directory, added under its new one"


def test_a_wiped_controller_voting_by_id_elects_a_leader_without_the_committed_topic() -> None:
    result = run(CONTROLLER_DISK_LOSS, guarded=False)
    # As analyze on the real scenario: the old leader replays the new leader's record where the topic's was.
    assert invariants(result) == ["LeaderHasAllAckedValues", "MetadataLogMatching"]
    assert "controller" in next(v.detail for v in result.violations if v.invariant == "MetadataLogMatching")
    seen = result.observed
    assert seen["leader_while_l_down"] is not None and not seen["topic_survived"]
    # The broker that had followed the lost entries is told to truncate below its high watermark: it halts.
    assert any("diverged below the high watermark" in line for line in result.trace), result.trace


def test_a_zombie_leader_acknowledges_no_acks_all_write_while_the_cluster_elects_another() -> None:
    result = run(ZOMBIE_LEADER, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["acknowledged_by_zombie"] == 0  # its ISR cannot follow it: the writes time out
    assert seen["acknowledged_before"] == seen["acknowledged_by_new_leader"] == 5 and seen["lost"] == 0


def test_a_zombie_leaders_acks_1_writes_are_truncated_when_the_cut_heals() -> None:
    result = run(ZOMBIE_LEADER, guarded=False)
    assert invariants(result) == ["LostAcksOneWrites"]
    seen = result.observed
    assert seen["acknowledged_by_zombie"] == seen["lost_acks_one"] == 10 and seen["lost"] == 0


def test_a_leader_cut_from_the_controllers_fences_itself_and_refuses_writes() -> None:
    result = run(PARTITIONED_BROKER, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["self_fenced"] == [1] and seen["answers_during_cut"].get("NOT_LEADER_OR_FOLLOWER") == 1
    assert "NONE" not in seen["answers_during_cut"] and seen["lost"] == 0


def test_without_self_fencing_the_cut_leader_takes_writes_that_time_out_for_as_long_as_the_cut_lasts() -> None:
    result = run(PARTITIONED_BROKER, guarded=False)
    assert invariants(result) == ["FencedLeaderStepsDown"]
    seen = result.observed
    assert seen["self_fenced"] == [] and list(seen["answers_during_cut"]) == ["REQUEST_TIMED_OUT"]
    assert seen["lost"] == 0


def test_with_pre_vote_a_controller_cut_off_and_healed_three_times_keeps_the_leader_and_its_epoch() -> None:
    result = run(DISRUPTIVE_CONTROLLER, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["leader_and_epoch"]["before"] == seen["leader_and_epoch"]["after"]
    assert seen["victim_timeouts"] == ["raft_prevote_started"] and seen["elections"]["count"] == 0


def test_without_pre_vote_every_heal_forces_a_kraft_election() -> None:
    result = run(DISRUPTIVE_CONTROLLER, guarded=False)
    assert invariants(result) == ["NoDisruptiveElection"]
    seen = result.observed
    assert seen["victim_timeouts"] == ["raft_election_started"] and seen["elections"]["count"] == 3
    assert seen["leaderless_ms"] > 0 and seen["lost"] == 0


def test_a_returning_broker_deletes_the_logs_moved_and_deleted_while_it_was_offline() -> None:
    result = run(STRAY_PARTITIONS, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["stray_check"] == {"stray_partition_deleted": ["recreated-0", "sim-0"], "stray_partition_kept": []}
    assert seen["new_topic_id"] and seen["recreated_isr"] == [2, 3] and seen["stray_logs"] == []


def test_without_the_stray_check_the_stale_logs_stay_and_the_recreated_topic_stays_under_replicated() -> None:
    result = run(STRAY_PARTITIONS, guarded=False)
    assert invariants(result) == ["NoStrayPartitionLogs"]
    seen = result.observed
    assert seen["stray_check"] == {"stray_partition_deleted": [], "stray_partition_kept": ["recreated-0", "sim-0"]}
    assert seen["recreated_isr"] == [2]  # the old directory's topic id keeps broker 3 from the new replica
    assert [log.split(":")[0] for log in seen["stray_logs"]] == ["broker 3 recreated-0", "broker 3 sim-0"]
    assert seen["lost"] == 0


def test_a_produce_delayed_past_its_transactions_abort_is_verified_and_refused() -> None:
    result = run(HANGING_TRANSACTION, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["transaction"] == {"first": "NONE", "abort": "NONE", "late_produce": "INVALID_TXN_STATE"}
    assert seen["high_watermark_and_lso"] == [52, 52] and seen["hanging"] == []
    assert seen["acknowledged_after"] == 50 and seen["unread_by_read_committed"] == 0


def test_without_verification_the_late_produce_hangs_and_read_committed_readers_stall_behind_it() -> None:
    result = run(HANGING_TRANSACTION, guarded=False)
    assert invariants(result) == ["NoCommittedRecordLost"]  # as a read_committed consumer sees it
    seen = result.observed
    assert seen["transaction"]["late_produce"] == "NONE" and seen["hanging"] == ["sim-0 from offset 2"]
    assert seen["high_watermark_and_lso"] == [53, 2] and seen["unread_by_read_committed"] == 50
    assert seen["lost"] == 0  # every write is in the leader's log, below its high watermark


def test_with_transaction_version_2_a_late_end_txn_is_fenced_and_the_next_transaction_ends_as_asked() -> None:
    result = run(DELAYED_END_TXN, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["transaction_version"] == 2 and seen["retried_commit"] == {"answer": "NONE", "epochs": [0, 1]}
    assert seen["late_end_txn"] == "PRODUCER_FENCED"
    assert seen["abort_of_transaction_2"] == {"answer": "NONE", "coordinator": "CompleteAbort"}
    assert seen["read_committed"] == ["order-1"]


def test_without_transaction_version_2_a_late_end_txn_commits_the_next_transaction_its_producer_aborts() -> None:
    result = run(DELAYED_END_TXN, guarded=False)
    assert invariants(result) == ["AbortedRead"]
    seen = result.observed
    assert seen["transaction_version"] == 0 and seen["late_end_txn"] == "NONE"
    assert seen["abort_of_transaction_2"] == {"answer": "INVALID_TXN_STATE", "coordinator": "CompleteCommit"}
    assert seen["read_committed"] == ["order-1", "order-2"]


def test_a_principal_without_idempotent_write_cannot_continue_anothers_producer() -> None:
    result = run(STOLEN_PRODUCER_ID, guarded=True)
    assert invariants(result) == [], result.trace
    seen = result.observed
    assert seen["forged"] == "CLUSTER_AUTHORIZATION_FAILED at -1"
    assert seen["admin_writes"] == ["NONE at 0", "NONE at 1", "NONE at 2", "NONE at 3"] and seen["lost"] == 0


def test_a_forged_batch_makes_the_owners_next_write_a_duplicate_that_is_acknowledged_and_never_written() -> None:
    result = run(STOLEN_PRODUCER_ID, guarded=False)
    assert invariants(result) == ["NoCommittedRecordLost"]
    seen = result.observed
    assert seen["forged"] == "NONE at 3" and seen["admin_writes"][3] == "NONE at 3"  # at her offset
    assert seen["lost"] == 1
