"""Each event-log and replica-log invariant passes on a clean run and fails, with the offending row, on a run
that contains exactly one violation of it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from run_fixtures import (
    TOPIC_ID,
    RunFixture,
    broker_registered,
    clean_run,
    event,
    partition_changed,
)

from minikafka.deploy.analysis import metadata_invariants as metadata
from minikafka.deploy.analysis import replica_invariants as replica
from minikafka.deploy.analysis.events import read_events
from minikafka.deploy.analysis.history import load_produced
from minikafka.deploy.analysis.replica_logs import load_replica_logs, log_matching
from minikafka.deploy.analysis.topic_incarnations import acknowledged_topic_ids

pytestmark = pytest.mark.spark

Check = Callable[..., object]


def run_check(spark, tmp_path: Path, run: RunFixture, check: str) -> list[dict]:  # noqa: ANN001
    run_dir = run.write(tmp_path / "run")
    loaded = read_events(spark, run_dir)
    events = loaded.rows
    produced = load_produced(spark, run_dir)
    if check == "log_matching":
        logs = load_replica_logs(spark, run_dir)
        frame = log_matching(logs.batches, logs.replicas)
    elif check == "leader_completeness":
        frame = replica.leader_completeness(events, acknowledged_topic_ids(produced, loaded.topics))
    elif check == "high_watermark_monotonic":
        frame = replica.high_watermark_monotonic(events)
    else:
        frame = getattr(metadata, check)(events)
    return [row.asDict(recursive=True) for row in frame.collect()]


CHECKS = [
    "isr_never_empty",
    "elr_members_complete",
    "leader_in_isr_and_replicas",
    "one_leader_per_leader_epoch",
    "epochs_monotonic",
    "metadata_log_matching",
    "one_raft_leader_per_epoch",
    "stale_broker_epoch_in_isr",
    "high_watermark_monotonic",
    "leader_completeness",
    "log_matching",
]


@pytest.mark.parametrize("check", CHECKS)
def test_clean_run_passes(spark, tmp_path: Path, check: str) -> None:  # noqa: ANN001
    assert run_check(spark, tmp_path, clean_run(), check) == []


def test_empty_isr_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.replayed.append(partition_changed(13, 10.0, -1, [], 2, 4, "fence:session_timeout"))
    rows = run_check(spark, tmp_path, run, "isr_never_empty")
    assert [(r["offset"], r["isr"]) for r in rows] == [(13, [])]


def test_an_empty_isr_beside_an_elr_is_kip_966(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.replayed.append({**partition_changed(13, 10.0, -1, [], 2, 4, "fence:session_timeout"), "elr": [2, 3]})
    assert run_check(spark, tmp_path, run, "isr_never_empty") == []


def elr_run(previous_broker_epoch: int) -> RunFixture:
    """Broker 2 joins the ELR, restarts (cleanly or not) and registers again; a later change still lists it."""
    run = clean_run()
    run.replayed += [
        {**partition_changed(13, 10.0, 3, [3], 1, 4, "fence:session_timeout"), "elr": [2]},
        broker_registered(14, 11.5, 2),
        {**partition_changed(15, 12.0, 3, [3], 1, 5, "alter_partition"), "elr": [2]},
    ]
    run.node_events.append(event("broker-2", 11.0, "broker_starting", previous_broker_epoch=previous_broker_epoch))
    return run


def test_an_elr_member_restarted_uncleanly_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    rows = run_check(spark, tmp_path, elr_run(-1), "elr_members_complete")
    assert [(r["offset"], r["broker_id"], r["registration_offset"]) for r in rows] == [(15, 2, 14)]


def test_an_elr_member_restarted_cleanly_stays(spark, tmp_path: Path) -> None:  # noqa: ANN001
    assert run_check(spark, tmp_path, elr_run(2), "elr_members_complete") == []


def test_leader_outside_isr_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.replayed.append(partition_changed(13, 10.0, 3, [2], 2, 4, "fence:session_timeout"))
    rows = run_check(spark, tmp_path, run, "leader_in_isr_and_replicas")
    assert [(r["offset"], r["leader"], r["isr"]) for r in rows] == [(13, 3, [2])]


def test_two_committed_leaders_in_one_leader_epoch_are_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.replayed.append(partition_changed(13, 10.0, 3, [2, 3], 1, 4, "unfence"))
    rows = run_check(spark, tmp_path, run, "one_leader_per_leader_epoch")
    assert {(r["source"], r["leader_epoch"], tuple(r["leaders"])) for r in rows} >= {("metadata", 1, (2, 3))}


def test_a_broker_leading_an_epoch_it_was_not_given_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.node_events.append(
        event(
            "broker-3",
            9.2,
            "become_leader",
            partition="t-0",
            leader=3,
            leader_epoch=1,
            partition_epoch=3,
            isr=[2, 3],
            leader_epoch_start_offset=6,
        )
    )
    rows = run_check(spark, tmp_path, run, "one_leader_per_leader_epoch")
    sources = {r["source"]: tuple(r["leaders"]) for r in rows}
    assert sources == {"brokers": (2, 3), "broker_vs_metadata": (2, 3)}


def test_leader_epoch_going_back_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.replayed.append(partition_changed(13, 10.0, 1, [1, 2], 0, 4, "unfence"))
    rows = run_check(spark, tmp_path, run, "epochs_monotonic")
    assert [(r["source"], r["position"], r["previous_leader_epoch"], r["leader_epoch"]) for r in rows] == [
        ("metadata", "13", 1, 0)
    ]


def test_a_broker_adopting_an_older_epoch_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.node_events.append(
        event(
            "broker-2",
            9.3,
            "become_follower",
            partition="t-0",
            leader=1,
            leader_epoch=0,
            partition_epoch=2,
            isr=[1, 2, 3],
            leader_epoch_start_offset=None,
        )
    )
    rows = run_check(spark, tmp_path, run, "epochs_monotonic")
    assert [(r["source"], r["previous_leader_epoch"], r["leader_epoch"]) for r in rows] == [("broker", 1, 0)]


def test_controllers_replaying_different_records_at_one_offset_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    diverged = partition_changed(8, 5.0, 1, [1, 3], 0, 1, "alter_partition")
    run.replayed[5] = dict(run.replayed[5], only_on=["controller-101"])
    run.replayed.append(dict(diverged, only_on=["controller-102"]))
    rows = run_check(spark, tmp_path, run, "metadata_log_matching")
    assert [(r["offset"], r["nodes"], len(r["records"])) for r in rows] == [
        (8, ["controller-101", "controller-102"], 2)
    ]


def test_controllers_replaying_config_records_of_other_values_at_one_offset_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    config = {"event": "topic_config_changed", "offset": 30, "topic": "orders", "name": "retention.ms"}
    run.node_events += [
        {**event("controller-101", 9.0, "topic_config_changed"), **config, "value": "1000"},
        {**event("controller-102", 9.1, "topic_config_changed"), **config, "value": "1000"},
        {**event("controller-103", 9.1, "topic_config_changed"), **config, "value": "2000"},
    ]
    rows = run_check(spark, tmp_path, run, "metadata_log_matching")
    assert [(r["offset"], r["nodes"], len(r["records"])) for r in rows] == [
        (30, ["controller-101", "controller-102", "controller-103"], 2)
    ]


def test_the_raft_layers_voter_events_at_an_offset_are_no_replayed_records(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """A VotersRecord is a Raft control record: its leader logs that it appended it and every controller that its set
    changed, at the record's offset. Those are not the metadata records the controllers replay."""
    run = clean_run()
    voters = {"epoch": 2, "offset": 30, "voters": ["101:a", "102:b", "103:c"]}
    run.node_events += [
        event("controller-101", 9.0, "raft_voter_change_appended", **voters, change="add", voter=103),
        *(event(node, 9.1, "raft_voter_set_changed", **voters, is_voter=True)
          for node in ("controller-101", "controller-102", "controller-103")),
    ]  # fmt: skip
    assert run_check(spark, tmp_path, run, "metadata_log_matching") == []


def test_a_topic_created_again_starts_its_epochs_over(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """Deleted and created again under the same name (a new topic id): its epochs start over, in the metadata and
    on a broker that deleted the old log, and a decrease within the new topic id is still caught."""
    run = clean_run()
    new_id = "6b1c9f0e-0000-4000-8000-0000000000bb"
    run.replayed.append({**partition_changed(20, 12.0, 2, [2, 3], 0, 0, "create"), "topic_id": new_id})
    become = {"partition": "t-0", "leader": 2, "isr": [2, 3], "leader_epoch_start_offset": 0}
    run.node_events += [
        event("broker-2", 11.0, "become_leader", **become, leader_epoch=1, partition_epoch=3),
        event("broker-2", 11.5, "log_deleted", partition="t-0", topic_id=TOPIC_ID, reason="topic deleted"),
        event("broker-2", 12.1, "become_leader", **become, leader_epoch=0, partition_epoch=0),
    ]
    assert run_check(spark, tmp_path, run, "epochs_monotonic") == []
    run.replayed.append({**partition_changed(21, 13.0, 2, [2], 0, 0, "alter_partition"), "topic_id": new_id})
    rows = run_check(spark, tmp_path / "again", run, "epochs_monotonic")
    assert [(r["source"], r["position"], r["previous_partition_epoch"]) for r in rows] == [("metadata", "21", 0)]


def test_two_raft_leaders_in_one_epoch_are_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.node_events.append(event("controller-102", 1.0, "raft_leader_elected", raft_node=102, epoch=1, leader=102))
    rows = run_check(spark, tmp_path, run, "one_raft_leader_per_epoch")
    assert [(r["epoch"], r["leaders"]) for r in rows] == [(1, [101, 102])]


def test_stale_broker_epoch_committed_into_the_isr_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # KIP-903: broker 3 re-registers (epoch 9) after the leader cached epoch 3, and the controller (check off)
    # commits the expansion with epoch 3 at offset 10.
    run = clean_run()
    run.replayed.insert(5, broker_registered(9, 6.5, 3))
    rows = run_check(spark, tmp_path, run, "stale_broker_epoch_in_isr")
    assert [(r["offset"], r["broker_id"], r["requested_broker_epoch"], r["current_broker_epoch"]) for r in rows] == [
        (10, 3, 3, 9)
    ]


def test_a_member_sent_with_epoch_minus_one_is_no_stale_admission(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # The same commit, but the leader had no Fetch from 3 yet and sent -1 (Kafka's rule): nothing is vouched for.
    run = clean_run()
    run.replayed.insert(5, broker_registered(9, 6.5, 3))
    accepted = next(e for e in run.node_events if e["event"] == "alter_partition_accepted")
    accepted["proposed_isr"] = [[1, 1], [2, 2], [3, -1]]
    assert run_check(spark, tmp_path, run, "stale_broker_epoch_in_isr") == []


def test_high_watermark_going_back_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.node_events.append(
        event(
            "broker-1",
            6.5,
            "high_watermark_advanced",
            partition="t-0",
            high_watermark=3,
            leader_epoch=0,
            log_end_offset=4,
        )
    )
    rows = run_check(spark, tmp_path, run, "high_watermark_monotonic")
    assert [(r["node"], r["previous_high_watermark"], r["high_watermark"]) for r in rows] == [("broker-1", 4, 3)]


def test_a_new_leader_missing_committed_records_is_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    new_leader = next(e for e in run.node_events if e["event"] == "become_leader" and e["node"] == "broker-2")
    new_leader["leader_epoch_start_offset"] = 3  # behind the HWM 4 of leader epoch 0 and the acks up to offset 4
    rows = run_check(spark, tmp_path, run, "leader_completeness")
    assert [(r["node"], r["leader_epoch_start_offset"], r["high_watermark_reached_before"]) for r in rows] == [
        ("broker-2", 3, 5)
    ]


def test_replicas_disagreeing_below_the_high_watermark_are_caught(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.replica_values["broker-3"][1] = ["v2", "other"]
    rows = run_check(spark, tmp_path, run, "log_matching")
    assert {(r["node_a"], r["node_b"], r["base_offset"]) for r in rows} == {
        ("broker-1", "broker-3", 2),
        ("broker-2", "broker-3", 2),
    }


def test_a_high_watermark_checkpoint_above_the_log_end_counts_as_the_log_end(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # broker-2 lost offsets 4-5 (unflushed when it crashed) after checkpointing HWM 6: its HWM is its log end, 4.
    run = clean_run()
    run.replica_values["broker-2"] = run.replica_values["broker-2"][:2]
    run.replica_epochs["broker-2"] = [0, 0]
    assert run_check(spark, tmp_path, run, "log_matching") == []


def test_a_high_watermark_checkpoint_over_an_empty_log_is_no_mismatch(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # The README's run: broker 1 killed with its page cache lost and never restarted holds an HWM checkpoint over
    # an empty log; every batch the others hold was counted as a mismatch.
    run = clean_run()
    run.replica_values["broker-1"] = []
    run.replica_epochs["broker-1"] = []
    assert run_check(spark, tmp_path, run, "log_matching") == []


def test_replicas_differing_only_above_a_high_watermark_pass(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.replica_values["broker-3"][2] = ["v4", "unacknowledged"]
    run.high_watermarks["broker-3"] = 4
    assert run_check(spark, tmp_path, run, "log_matching") == []
