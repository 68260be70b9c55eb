"""Stopping nodes (`cluster down`, `fault stop`): a broker whose controlled shutdown takes minutes is waited for, not
killed after 30 s; a node is killed at its bound, or sooner once it stopped running; the wait says what it waits
for. On a simulated process table and clock."""

from __future__ import annotations

import pytest

from minikafka.broker.lifecycle_manager import CONTROLLED_SHUTDOWN_TIMEOUT_S
from minikafka.deploy import graceful_stop
from minikafka.deploy.graceful_stop import (
    BROKER_STOP_TIMEOUT_S,
    CONTROLLER_STOP_TIMEOUT_S,
    StopPolicy,
    stop_nodes,
    wait_for_exits,
)


class FakeProcesses:
    """Processes that exit at a set time (None: never) and use CPU until a set time (None: while they run)."""

    def __init__(self, exits_at: dict[int, float | None], cpu_until: dict[int, float | None] | None = None) -> None:
        self.clock = 0.0
        self.exits_at = exits_at
        self.cpu_until = cpu_until or {}

    def alive(self, pid: int) -> bool:
        exit_time = self.exits_at[pid]
        return exit_time is None or self.clock < exit_time

    def cpu_seconds(self, pid: int) -> float | None:
        until = self.cpu_until.get(pid)
        running_for = self.clock if until is None else min(self.clock, until)
        return round(running_for * 0.05, 2)  # 5% of a core, in clock ticks of 10 ms

    def now(self) -> float:
        return self.clock

    def sleep(self, seconds: float) -> None:
        self.clock += seconds


def test_a_broker_whose_controlled_shutdown_takes_minutes_is_waited_for_and_told_about() -> None:
    processes = FakeProcesses({1: 106.0})
    reports: list[str] = []
    policies = {"broker-1": StopPolicy(BROKER_STOP_TIMEOUT_S)}
    outcomes = wait_for_exits({"broker-1": 1}, policies, processes, reports.append)
    assert outcomes["broker-1"].exited and outcomes["broker-1"].reason == "exited"
    assert 106.0 <= outcomes["broker-1"].waited_s < 106.2
    assert len(reports) == 10  # one every 10 s
    assert reports[0].startswith("waiting for broker-1 to shut down cleanly")
    assert "--timeout" in reports[0] and "fault kill" in reports[0]


def test_the_default_bounds_are_kafkas_controlled_shutdown_wait_for_a_broker_and_30_s_for_a_controller() -> None:
    assert BROKER_STOP_TIMEOUT_S > CONTROLLED_SHUTDOWN_TIMEOUT_S
    assert graceful_stop.default_timeout_s("broker") == BROKER_STOP_TIMEOUT_S
    assert graceful_stop.default_timeout_s("controller") == CONTROLLER_STOP_TIMEOUT_S == 30.0


def test_a_node_still_running_at_its_bound_is_given_up_on_and_the_others_are_waited_for() -> None:
    processes = FakeProcesses({1: None, 2: 50.0, 101: 3.0})
    policies = {"broker-1": StopPolicy(40.0), "broker-2": StopPolicy(BROKER_STOP_TIMEOUT_S)}
    outcomes = wait_for_exits({"broker-1": 1, "broker-2": 2}, policies, processes, lambda _line: None)
    assert not outcomes["broker-1"].exited and outcomes["broker-1"].reason == "timed out"
    assert 40.0 <= outcomes["broker-1"].waited_s < 40.2
    assert outcomes["broker-2"].exited and outcomes["broker-2"].waited_s >= 50.0


def test_a_node_that_stopped_using_cpu_is_given_up_on_before_its_bound() -> None:
    processes = FakeProcesses({1: None}, cpu_until={1: 12.0})  # hung 12 s into its shutdown
    outcomes = wait_for_exits(
        {"broker-1": 1}, {"broker-1": StopPolicy(300.0, stall_s=30.0)}, processes, lambda _l: None
    )
    assert outcomes["broker-1"].reason == "stalled"
    assert 41.0 < outcomes["broker-1"].waited_s < 43.0  # 30 s after its last CPU tick


def test_stop_nodes_sigterms_all_then_kills_only_those_that_did_not_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    signals: list[tuple[str, int]] = []
    monkeypatch.setattr(graceful_stop, "terminate", lambda pid: signals.append(("TERM", pid)))
    monkeypatch.setattr(graceful_stop, "kill", lambda pid: signals.append(("KILL", pid)))
    monkeypatch.setattr(graceful_stop, "wait_exit", lambda pid, timeout_s: True)
    processes = FakeProcesses({1: 100.0, 2: None})
    nodes = {"broker-1": (1, "broker"), "broker-2": (2, "broker")}
    outcomes = stop_nodes(nodes, timeout_s=None, report=lambda _line: None, probe=processes)
    assert signals == [("TERM", 1), ("TERM", 2), ("KILL", 2)]
    assert outcomes["broker-1"].exited and not outcomes["broker-2"].exited
    assert outcomes["broker-2"].waited_s >= BROKER_STOP_TIMEOUT_S
    signals.clear()
    processes = FakeProcesses({1: 100.0})
    outcomes = stop_nodes({"broker-1": (1, "broker")}, timeout_s=0.0, report=lambda _line: None, probe=processes)
    assert signals == [("TERM", 1), ("KILL", 1)] and outcomes["broker-1"].waited_s == 0.0  # --timeout 0: force
