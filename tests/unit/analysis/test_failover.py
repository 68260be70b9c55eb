"""Failover rows: a leader lost to a fault is timed to its fencing, its successor and the first write after it;
a fault that loses no leader (a pause shorter than the session timeout) gets no row and no credit for the next
fault's failover."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_fixtures import clean_run, event

from minikafka.deploy.analysis.events import load_events
from minikafka.deploy.analysis.failover import broker_failovers
from minikafka.deploy.analysis.history import load_produced

pytestmark = pytest.mark.spark


def failovers(spark, run_dir: Path) -> list[dict]:  # noqa: ANN001
    frame = broker_failovers(load_events(spark, run_dir), load_produced(spark, run_dir))
    return [row.asDict() for row in frame.collect()]


def test_a_short_pause_before_a_kill_is_not_a_failover(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    pause = event("fault-injector", 3.0, "fault_injected", fault="pause", target="broker-1", target_id=1, role="broker")
    run.node_events.append(pause)
    [row] = failovers(spark, run.write(tmp_path / "run"))
    # Only the kill at 8 s lost the leader: fenced and replaced 1 s later, not 6 s after the pause.
    assert (row["fault"], row["tp"], row["new_leader"]) == ("kill", "t-0", 2)
    assert row["new_leader_ms"] == pytest.approx(1000, abs=1)
    assert row["fence_ms"] == pytest.approx(1000, abs=1)


def test_a_kill_whose_leader_is_never_replaced_is_not_timed_from_a_later_fault(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.node_events.append(
        event("fault-injector", 8.5, "fault_injected", fault="reboot", target="broker-1", target_id=1, role="broker")
    )
    [row] = failovers(spark, run.write(tmp_path / "run"))
    # The kill at 8 s is followed by a reboot of the same broker at 8.5 s, before the fencing at 9 s: the kill's
    # window closed with no loss seen, and the reboot (broker-1 still the leader of record) takes the failover.
    assert (row["fault"], row["new_leader"]) == ("reboot", 2)
    assert row["new_leader_ms"] == pytest.approx(500, abs=1)
