"""A topic deleted and created again under the same name is a new topic (a new topic id, leader epochs and offsets
from 0 again): analyze checks each incarnation apart, and the writes acknowledged to the deleted one are reported as
deleted with it, not lost. The events are shaped as a real run's (`scenario run` of a topic deleted and re-created:
the brokers' `become_leader` / `become_follower` carry no topic id, their `replica_stopped` / `log_deleted` do)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from run_fixtures import RunFixture, clean_run, event, partition_changed, produced_line, read_end

from minikafka.deploy.analysis.events import load_events, read_events
from minikafka.deploy.analysis.history import load_consumed, load_produced
from minikafka.deploy.analysis.history_invariants import inconsistent_offsets, lost_writes
from minikafka.deploy.analysis.metadata_invariants import one_leader_per_leader_epoch
from minikafka.deploy.analysis.replica_invariants import leader_completeness
from minikafka.deploy.analysis.report import judge
from minikafka.deploy.analysis.tallies import produced_tallies
from minikafka.deploy.analysis.topic_incarnations import acknowledged_topic_ids, split_deleted_topic_writes

pytestmark = pytest.mark.spark

OLD_ID = "9a1c9f0e-0000-4000-8000-0000000000aa"
NEW_ID = "9a1c9f0e-0000-4000-8000-0000000000bb"
TOPIC = "again"
BROKERS = ("broker-1", "broker-2", "broker-3")


def created(offset: int, at: float, topic_id: str, replicas: list[int]) -> dict[str, Any]:
    change = partition_changed(offset, at, replicas[0], replicas, 0, 0, "create")
    return {**change, "topic": TOPIC, "topic_id": topic_id, "replicas": replicas}


def role(node: str, at: float, leader: int, leader_epoch: int, isr: list[int], start: int | None) -> dict[str, Any]:
    name = "become_leader" if node == f"broker-{leader}" else "become_follower"
    return event(
        node, at, name, partition=f"{TOPIC}-0", leader=leader, leader_epoch=leader_epoch,
        partition_epoch=leader_epoch, isr=isr, leader_epoch_start_offset=start if name == "become_leader" else None,
        leader_recovery_state="RECOVERED",
    )  # fmt: skip


def high_watermark(node: str, at: float, leader_epoch: int, offset: int) -> dict[str, Any]:
    return event(
        node, at, "high_watermark_advanced", partition=f"{TOPIC}-0", high_watermark=offset,
        leader_epoch=leader_epoch, log_end_offset=offset,
    )  # fmt: skip


def recreated_run() -> RunFixture:
    """`again` (leader 1) gets 3 acknowledged writes and is deleted; created again with leader 2, it gets 2, and
    broker 3 takes over in leader epoch 1 from offset 2; the final read finds the new topic's 2 records."""
    run = clean_run()
    run.replayed += [
        created(20, 12.0, OLD_ID, [1, 2, 3]),
        {"event": "topic_deleted", "at": 13.0, "offset": 21, "topic": TOPIC, "topic_id": OLD_ID, "partitions": 1},
        created(22, 13.5, NEW_ID, [2, 3, 1]),
        {**created(23, 15.0, NEW_ID, [2, 3, 1]), "leader": 3, "isr": [3, 1], "leader_epoch": 1, "partition_epoch": 1,
         "reason": "controlled_shutdown"},
    ]  # fmt: skip
    for node in BROKERS:
        run.node_events += [
            role(node, 12.1, 1, 0, [1, 2, 3], 0),
            event(node, 13.05, "replica_stopped", partition=f"{TOPIC}-0", topic_id=OLD_ID, reason="topic deleted"),
            event(node, 13.06, "log_deleted", partition=f"{TOPIC}-0", topic_id=OLD_ID, reason="topic deleted",
                  directory=f"/run/{node}/data/{TOPIC}-0.deleted-delete"),
            role(node, 13.6, 2, 0, [1, 2, 3], 0),
        ]  # fmt: skip
    run.node_events += [
        high_watermark("broker-1", 12.5, 0, 3),
        high_watermark("broker-2", 14.0, 0, 2),
        role("broker-3", 15.1, 3, 1, [3, 1], 2),
        role("broker-1", 15.1, 3, 1, [3, 1], None),
    ]
    for offset in range(3):
        run.produced.append({**produced_line(12.4, offset, f"old-{offset}"), "topic": TOPIC})
    for offset in range(2):
        run.produced.append({**produced_line(14.0, offset, f"new-{offset}"), "topic": TOPIC})
        run.consumed.append({"topic": TOPIC, "partition": 0, "offset": offset, "key": None, "value": f"new-{offset}",
                             "leader_epoch": 0})  # fmt: skip
    run.consumed.append({**read_end(2, 2, None, log_end=2), "topic": TOPIC})
    return run


def test_a_topic_deleted_and_created_again_is_a_new_topic(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # Keyed by name alone, epoch 0 had leaders 1 and 2, broker 3's log (from offset 2) missed the old topic's
    # HWM 3, and the old topic's writes were lost or overwritten: none of that concerns the new topic.
    run_dir = recreated_run().write(tmp_path / "run")
    loaded = read_events(spark, run_dir)
    events, produced = loaded.rows.cache(), load_produced(spark, run_dir)
    consumed = load_consumed(spark, run_dir)
    assert one_leader_per_leader_epoch(events).collect() == []
    dated = acknowledged_topic_ids(produced, loaded.topics)
    assert leader_completeness(events, dated).collect() == []
    split = split_deleted_topic_writes(dated)
    assert [(r["offset"], r["acked_value"], r["topic_id"]) for r in split.deleted.collect()] == [
        (offset, f"old-{offset}", OLD_ID) for offset in range(3)
    ]
    assert lost_writes(split.kept, consumed).collect() == []
    assert inconsistent_offsets(split.kept, consumed).collect() == []


def test_an_aborted_transactions_writes_to_a_deleted_topic_are_not_counted_as_deleted_with_it(
    spark,
    tmp_path: Path,  # noqa: ANN001
) -> None:
    run = recreated_run()
    aborted = {"idempotent": True, "transactional_id": "txn-0", "transaction": 0, "transaction_end": "abort",
               "end_acknowledged": True}  # fmt: skip
    run.produced.append({**produced_line(12.45, 3, "aborted-3"), "topic": TOPIC, **aborted})
    run_dir = run.write(tmp_path / "run")
    dated = acknowledged_topic_ids(load_produced(spark, run_dir), read_events(spark, run_dir).topics).cache()
    split = split_deleted_topic_writes(dated)
    assert sorted(r["acked_value"] for r in split.deleted.collect()) == [f"old-{offset}" for offset in range(3)]
    assert [r["topic_incarnation"] for r in split.kept.where("value = 'aborted-3'").collect()] == [OLD_ID]
    assert produced_tallies(dated).deleted_with_topic == 3


def test_two_leaders_in_one_epoch_of_one_incarnation_still_fail(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = recreated_run()
    run.node_events.append(role("broker-1", 15.2, 1, 1, [3, 1], 2))  # broker 1 too leads the new topic's epoch 1
    rows = one_leader_per_leader_epoch(load_events(spark, run.write(tmp_path / "run"))).collect()
    assert {(r["source"], r["topic_incarnation"], r["leader_epoch"], tuple(r["leaders"])) for r in rows} == {
        ("brokers", NEW_ID, 1, (1, 3)),
        ("broker_vs_metadata", NEW_ID, 1, (1, 3)),
    }


def test_the_final_read_counts_the_deleted_topics_writes_apart(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # A live consumer read the deleted topic first: the same offsets held other values then, in the same file.
    run = recreated_run()
    for line in run.consumed:
        line.setdefault("topic_id", NEW_ID if line.get("topic") == TOPIC else None)
    old_reads = [{"topic": TOPIC, "partition": 0, "offset": offset, "key": None, "value": f"old-{offset}",
                  "leader_epoch": 0, "topic_id": OLD_ID} for offset in range(3)]  # fmt: skip
    run.consumed[:0] = old_reads
    judged = judge(spark, run.write(tmp_path / "run"))
    final = judged.final_read
    assert (final["deleted_with_topic"], final["lost"], final["unknown"]) == (3, 0, 0)
    assert final["read"] == final["acknowledged"] - 3
    assert [v.name for v in judged.verdicts if not v.passed and v.severity == "invariant"] == []
