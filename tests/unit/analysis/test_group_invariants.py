"""The consumer group invariants pass on commits that only move forward (across a coordinator move) and fail, with
the offending row, on a commit that goes back and on a record consumed below an offset already committed."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_fixtures import RunFixture, event, ts

from minikafka.deploy.analysis import group_invariants as groups
from minikafka.deploy.analysis.events import load_events
from minikafka.deploy.analysis.history import consumed_records, read_consume_files

pytestmark = pytest.mark.spark


def commit(node: str, at: float, offset: int, partition: int = 0) -> dict:
    return event(
        node,
        at,
        "offset_committed",
        group="g",
        topic="t",
        partition=partition,
        offset=offset,
        previous_offset=None,
        member_id="m-1",
        generation=2,
    )


def group_line(at: float, offset: int) -> dict:
    return {"topic": "t", "partition": 0, "offset": offset, "value": f"v{offset}", "group": "g", "ts": ts(at)}


def groups_run(commits: list[dict], consumed: list[dict]) -> RunFixture:
    run = RunFixture()
    run.node_events = [
        event("broker-1", 0.5, "group_coordinator_loaded", partition=3, leader_epoch=0, groups=0, offsets=0),
        *commits,
        event("broker-2", 2.5, "group_coordinator_loaded", partition=3, leader_epoch=1, groups=1, offsets=1),
    ]
    run.consumed = consumed
    return run


def check(spark, tmp_path: Path, run: RunFixture) -> tuple[list[dict], list[dict], list[dict]]:  # noqa: ANN001
    run_dir = run.write(tmp_path / "run")
    events = load_events(spark, run_dir)
    consumed = consumed_records(read_consume_files(spark, run_dir).rows)
    rows = (
        groups.committed_offsets_monotonic(events),
        groups.no_backwards_poll(events, consumed),
        groups.group_timeline(events),
    )
    return tuple([r.asDict() for r in frame.collect()] for frame in rows)  # type: ignore[return-value]


def test_forward_commits_across_a_coordinator_move_pass(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = groups_run(
        [commit("broker-1", 1, 5), commit("broker-1", 2, 9), commit("broker-2", 3, 9), commit("broker-2", 4, 12)],
        [group_line(0.8, 3), group_line(1.5, 7), group_line(3.5, 10)],
    )
    backwards_commits, backwards_polls, timeline = check(spark, tmp_path, run)
    assert backwards_commits == [] and backwards_polls == []
    assert [(row["node"], row["event"]) for row in timeline] == [
        ("broker-1", "group_coordinator_loaded"),
        ("broker-2", "group_coordinator_loaded"),
    ]


def test_a_commit_that_goes_back_after_a_coordinator_move_fails(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = groups_run([commit("broker-1", 1, 9), commit("broker-2", 3, 4)], [])
    backwards_commits, _, _ = check(spark, tmp_path, run)
    assert [(r["node"], r["offset"], r["previous_offset"], r["previous_node"]) for r in backwards_commits] == [
        ("broker-2", 4, 9, "broker-1")
    ]


def test_a_record_consumed_below_a_committed_offset_is_a_backwards_poll(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = groups_run([commit("broker-1", 1, 9)], [group_line(0.5, 2), group_line(2, 5)])
    _, backwards_polls, _ = check(spark, tmp_path, run)
    assert [(r["tp"], r["consumed_offset"], r["committed_before"]) for r in backwards_polls] == [("t-0", 5, 9)]


def held(at: float, member: str, epoch: int, assigned: list[str], pending: list[str] | None = None) -> dict:
    fields = {"group_id": "k", "member_id": member, "member_epoch": epoch, "assigned": assigned}
    return event("broker-1", at, "consumer_group_member_assignment", **fields, pending_revocation=pending or [])


def double_owned(spark, tmp_path: Path, node_events: list[dict]) -> list[tuple]:  # noqa: ANN001
    run = RunFixture()
    run.node_events = node_events
    events = load_events(spark, run.write(tmp_path / "run"))
    return [(r["tp"], r["member"], r["other"]) for r in groups.no_double_ownership(events).collect()]


def test_a_partition_handed_over_after_its_revocation_is_acknowledged_passes(spark, tmp_path: Path) -> None:  # noqa: ANN001
    history = [
        held(1, "a", 1, ["t-0", "t-1"]),
        held(2, "b", 2, []),  # b waits for t-1 (unreleased)
        held(2.1, "a", 1, ["t-0"], ["t-1"]),  # a told to revoke t-1
        held(3, "a", 2, ["t-0"]),  # a acknowledged
        held(3.5, "b", 2, ["t-1"]),
        event("broker-1", 4, "consumer_group_member_left", group_id="k", member_id="a", reason="left"),
        held(5, "b", 3, ["t-0", "t-1"]),
    ]
    assert double_owned(spark, tmp_path, history) == []


def test_a_partition_given_while_its_previous_owner_still_revokes_it_fails(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """A doctored history: b gets t-1 while a has not acknowledged its revocation."""
    history = [
        held(1, "a", 1, ["t-0", "t-1"]),
        held(2, "a", 1, ["t-0"], ["t-1"]),
        held(2.5, "b", 2, ["t-1"]),
        held(3, "a", 2, ["t-0"]),
    ]
    assert double_owned(spark, tmp_path, history) == [("t-1", "a", "b")]
