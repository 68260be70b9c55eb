"""The failover line `analyze` prints says what happened when there is nothing to time, not "n/a ms"."""

from __future__ import annotations

from minikafka.deploy.analysis.report_render import _failover_line


def _summary(losses: int, new_leader: float | None, first_ack: float | None) -> dict:
    failover = {"leader_losses": losses, "new_leader_ms_p50": new_leader, "new_leader_ms_max": new_leader}
    return {"failover": {**failover, "first_ack_ms_p50": first_ack, "first_ack_ms_max": first_ack}}


def test_no_leader_lost_says_so() -> None:
    line = _failover_line(_summary(0, None, None))
    assert line == "no partition leader was lost to a fault, so there was no failover to time"


def test_a_loss_without_a_later_acknowledged_write_says_so() -> None:
    line = _failover_line(_summary(2, 3001.0, None))
    assert line.startswith("2 partition leaders lost to faults; new leader committed p50 3001.0 ms (max 3001.0)")
    assert line.endswith("no write to those partitions was acknowledged after them") and "n/a" not in line


def test_timed_failovers_keep_their_figures() -> None:
    line = _failover_line(_summary(1, 2999.0, 3100.5))
    assert "new leader committed p50 2999.0 ms" in line and "first acknowledged write p50 3100.5 ms" in line
