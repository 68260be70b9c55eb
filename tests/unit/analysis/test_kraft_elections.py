"""The controller quorum's elections and leaderless time in analyze's summary: from a displaced leader's
`raft_resigned` to the next `raft_leader_elected`."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_fixtures import clean_run, event

from minikafka.deploy.analysis.events import load_events
from minikafka.deploy.analysis.kraft_summary import kraft_lines, kraft_summary
from minikafka.deploy.analysis.timelines import controller_elections

pytestmark = pytest.mark.spark


def test_a_displaced_leader_is_timed_to_the_next_election(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.node_events += [
        # The clean run's leader 101 (epoch 1) steps down to a cut-off voter's higher epoch; 102 wins epoch 4.
        event("controller-101", 3.0, "raft_resigned", raft_node=101, epoch=1, reason="higher epoch 3"),
        event("controller-102", 5.5, "raft_leader_elected", raft_node=102, epoch=4, leader=102),
        # A leader that crashed logs nothing: the election after it adds no leaderless time.
        event("controller-101", 7.0, "raft_leader_elected", raft_node=101, epoch=5, leader=101),
    ]
    rows = [row.asDict() for row in controller_elections(load_events(spark, run.write(tmp_path / "run"))).collect()]
    assert [(r["epoch"], r["leader"]) for r in rows] == [(1, 101), (4, 102), (5, 101)]
    assert rows[0]["leaderless_ms"] is None and rows[2]["leaderless_ms"] is None
    assert rows[1]["leaderless_ms"] == pytest.approx(2500, abs=1)
    summary = kraft_summary(rows)
    assert (summary["elections"], summary["leaderless_ms"]) == (3, 2500)
    assert kraft_lines({"kraft": summary}) == [
        "3 KRaft elections (epochs 1, 4, 5); leaderless 2500 ms (from a leader's raft_resigned to the next election)"
    ]
    assert kraft_lines({}) == []
    assert kraft_lines({"kraft": kraft_summary(rows, voter_set_changes=2)})[0].endswith(
        "; 2 voter set changes (KIP-853)"
    )
