"""Losses Kafka's promises allow, on synthetic runs: acks=1 writes a zombie leader acknowledged during a network cut
(a warning naming the cut), acks=all writes an unclean election discarded (a warning naming the election); a lost
acks=all write with neither explanation still fails. The timeline lists the cuts and the incidents."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_fixtures import TOPIC_ID, clean_run, consumed_line, event, partition_changed, produced_line, read_end

from minikafka.deploy.analysis.report import analyze, judge
from minikafka.deploy.analysis.report_render import render_markdown

pytestmark = pytest.mark.spark

OTHERS = [2, 3, 101, 102]


def zombie_run():  # noqa: ANN201 - run_fixtures.RunFixture
    """broker-1, leader of t-0 in epoch 0, is isolated at 10 s; while broker-2 leads epoch 1 it acknowledges two
    acks=1 writes at offsets 6 and 7; the heal at 12 s truncates them, and broker-2's acks=all writes are there.
    Incidents of each kind are logged on the way (the timeline lists them)."""
    run = clean_run()
    run.node_events += [
        event("fault-injector", 10.0, "fault_injected", fault="isolate", target="broker-1", target_id=1,
              role="broker", mode="in-process", **{"from": [1], "to": OTHERS}, one_way=False, active=1),
        event("fault-injector", 12.0, "fault_injected", fault="heal", target="all", role="network", nodes=[],
              active=0),
    ]  # fmt: skip
    # and, for the timeline, incidents of each kind
    run.node_events += [
        event("broker-3", 8.5, "log_dir_offline", log_dir="/data/broker-3", reason="append of t-0 failed: ENOSPC"),
        event("broker-2", 8.6, "log_batch_corrupt", partition="t-0", offset=2, error="CRC mismatch"),
        event("controller-101", 9.2, "reassignment_started", topic="t", topic_id=TOPIC_ID, partition=0,
              target_replicas=[1, 2, 4], original_replicas=[1, 2, 3], adding=[4], removing=[3]),
        event("controller-101", 9.4, "reassignment_completed", topic="t", topic_id=TOPIC_ID, partition=0,
              replicas=[1, 2, 4], removed=[3], added=[4], leader=2, reason="alter_partition"),
        event("broker-3", 9.5, "log_deleted", partition="t-0", topic_id=TOPIC_ID, reason="replica removed",
              directory="/data/broker-3/t-0"),
    ]  # fmt: skip
    for offset in (6, 7):
        run.produced.append({**produced_line(10.5, offset, f"zombie-{offset}"), "acks": "1"})
        run.produced.append(produced_line(11.0, offset, f"new-{offset}"))
        run.consumed.append(consumed_line(offset, f"new-{offset}"))
    return run


def summarise(spark, run, tmp_path: Path) -> dict:  # noqa: ANN001
    out = tmp_path / "report"
    out.mkdir()
    return analyze(spark, run.write(tmp_path / "run"), out)


def test_a_zombies_acks_one_writes_are_a_warning_naming_the_cut_and_incidents_are_listed(spark, tmp_path: Path) -> None:  # noqa: ANN001
    summary = summarise(spark, zombie_run(), tmp_path)
    verdicts = {v["name"]: v for v in summary["invariants"]}
    assert summary["verdict"] == "pass", [v for v in summary["invariants"] if v["verdict"] == "fail"]
    warned = verdicts["LostAcksOneWrites"]
    assert (warned["verdict"], warned["violations"]) == ("warn", 2)
    assert [(r["offset"], r["acked_value"], r["cut_in_force"]) for r in warned["offending_rows"]] == [
        (6, "zombie-6", "broker-1"),
        (7, "zombie-7", "broker-1"),
    ]
    assert verdicts["InconsistentOffsets"]["verdict"] == "pass"  # the new leader's values, not a conflict
    [cut] = summary["network_cuts"]
    assert (cut["fault"], cut["target"], cut["from_ids"], cut["seconds"]) == ("isolate", "broker-1", [1], 2.0)
    markdown = render_markdown(summary)
    assert "## Network cuts (cut to heal)" in markdown and "| LostAcksOneWrites | WARN | 2 |" in markdown
    found = [(i["kind"], i["event"], i["node"], i["tp"]) for i in summary["incidents"]]
    assert found == [
        ("storage", "log_dir_offline", "broker-3", None),
        ("storage", "log_batch_corrupt", "broker-2", "t-0"),
        ("replica set", "reassignment_started", "controller-101", "t-0"),
        ("replica set", "reassignment_completed", "controller-101", "t-0"),
        ("replica set", "log_deleted", "broker-3", "t-0"),
    ]
    assert '"target_replicas":[1,2,4]' in summary["incidents"][2]["detail"]
    assert "## Incidents: storage, replica sets, unclean elections" in markdown


def test_a_lost_acks_all_write_with_no_explanation_still_fails(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = zombie_run()
    run.consumed = [c for c in run.consumed if c["offset"] != 7]
    run.consumed.append(read_end(8, 8, None, log_end=8))
    judged = judge(spark, run.write(tmp_path / "run"))  # the verdicts alone: no figures or timelines
    verdicts = {v.name: v.to_json() for v in judged.verdicts}
    assert judged.verdict == "fail"
    assert [r["offset"] for r in verdicts["NoCommittedRecordLost"]["offending_rows"]] == [7]


def unclean_run():  # noqa: ANN201 - run_fixtures.RunFixture
    """After broker-2 led epoch 1 up to offset 6, only broker-3 is left, out of sync with its log ending at 4; an
    unclean election makes it leader in epoch 2 and the acknowledged offsets 4 and 5 are gone."""
    run = clean_run()
    run.replayed.append(partition_changed(14, 20.0, 3, [3], 2, 4, "unclean_election"))
    run.node_events += [
        event("controller-101", 20.0, "leader_elected", topic="t", topic_id=TOPIC_ID, partition=0, leader=3,
              previous_leader=-1, leader_epoch=2, reason="unclean_election", election_type="UNCLEAN", unclean=True),
        event("broker-3", 20.1, "become_leader", partition="t-0", leader=3, leader_epoch=2, partition_epoch=4,
              isr=[3], leader_epoch_start_offset=4),
    ]  # fmt: skip
    run.consumed = [c for c in run.consumed if c["offset"] < 4] + [read_end(4, 4, None, log_end=4)]
    for node in ("broker-1", "broker-2", "broker-3"):  # the replicas as they ended: broker-3's log
        run.replica_values[node] = run.replica_values[node][:2]
        run.replica_epochs[node] = run.replica_epochs[node][:2]
        run.high_watermarks[node] = 4
    return run


def test_writes_an_unclean_election_discarded_are_charged_to_it(spark, tmp_path: Path) -> None:  # noqa: ANN001
    summary = summarise(spark, unclean_run(), tmp_path)
    verdicts = {v["name"]: v for v in summary["invariants"]}
    assert summary["verdict"] == "pass", [v for v in summary["invariants"] if v["verdict"] == "fail"]
    charged = verdicts["UncleanElectionLoss"]
    assert (charged["verdict"], charged["violations"]) == ("warn", 2)
    assert [
        (r["offset"], r["new_leader"], r["leader_epoch"], r["new_leader_log_end"]) for r in charged["offending_rows"]
    ] == [
        (4, 3, 2, 4),
        (5, 3, 2, 4),
    ]
    assert verdicts["LeaderCandidateCompleteness"]["verdict"] == "pass"
    assert summary["final_read"]["lost"] == 2 and summary["final_read"]["lost_to_unclean_elections"] == 2
    [incident] = [i for i in summary["incidents"] if i["event"] == "leader_elected"]
    assert (incident["kind"], incident["tp"]) == ("unclean election", "t-0")
