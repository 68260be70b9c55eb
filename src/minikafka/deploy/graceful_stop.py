"""Waiting for SIGTERMed nodes to stop cleanly, with SIGKILL only as the last resort.

A broker's SIGTERM starts its controlled shutdown, which Kafka lets wait up to five minutes for the controller's
grant (moving thousands of leaderships, and the other brokers applying the move, takes that long at tens of
thousands of partitions). So a stop waits as long as the broker may wait, plus its own closing, and says what it
waits for every few seconds. It gives up sooner only on a process that has stopped running: its CPU time has not
moved for `stall_s` (a live node's timers and heartbeats use some every second).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from minikafka.broker.lifecycle_manager import CONTROLLED_SHUTDOWN_TIMEOUT_S
from minikafka.deploy.local_cluster import is_alive, kill, terminate, wait_exit

# A broker's stop: its controlled shutdown's wait for the grant (Kafka's bound), then closing its logs.
BROKER_STOP_TIMEOUT_S = CONTROLLED_SHUTDOWN_TIMEOUT_S + 30.0
CONTROLLER_STOP_TIMEOUT_S = 30.0  # a controller has no controlled shutdown: it closes its log and goes
STALL_S = 30.0
REPORT_EVERY_S = 10.0
_POLL_S = 0.05
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class ProcessProbe(Protocol):
    """What the wait looks at: the process table and a clock (a test passes its own)."""

    def alive(self, pid: int) -> bool: ...

    def cpu_seconds(self, pid: int) -> float | None: ...

    def now(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class StopPolicy:
    timeout_s: float  # SIGKILL a node still running this long after SIGTERM
    stall_s: float = STALL_S  # ...or sooner, once its CPU time has not moved for this long


@dataclass(frozen=True)
class StopOutcome:
    exited: bool  # it exited by itself; else it must be killed
    waited_s: float
    reason: str  # "exited", "timed out" or "stalled"


def default_timeout_s(role: str) -> float:
    return BROKER_STOP_TIMEOUT_S if role == "broker" else CONTROLLER_STOP_TIMEOUT_S


def wait_for_exits(
    pids: Mapping[str, int],
    policies: Mapping[str, StopPolicy],
    probe: ProcessProbe,
    report: Callable[[str], object],
    report_every_s: float = REPORT_EVERY_S,
) -> dict[str, StopOutcome]:
    """Wait for the SIGTERMed processes `pids` (by label) to exit, each until its policy gives up on it; reports
    the ones still running every `report_every_s`. Kills nothing: the caller kills those not `exited`."""
    start = probe.now()
    outcomes: dict[str, StopOutcome] = {}
    last_cpu = {label: (probe.cpu_seconds(pid), start) for label, pid in pids.items()}
    next_report = start + report_every_s
    while True:
        now = probe.now()
        for label, pid in pids.items():
            if label not in outcomes:
                outcome = _outcome(label, pid, policies[label], now - start, now, last_cpu, probe)
                if outcome is not None:
                    outcomes[label] = outcome
        waiting = [label for label in pids if label not in outcomes]
        if not waiting:
            return outcomes
        if now >= next_report:
            next_report = now + report_every_s
            bound = max(policies[label].timeout_s for label in waiting)
            report(
                f"waiting for {', '.join(waiting)} to shut down cleanly (a broker's controlled shutdown): "
                f"{now - start:.0f} s of at most {bound:.0f} s; --timeout S sets the bound, "
                "`minikafka fault kill ID` stops a node at once"
            )
        probe.sleep(_POLL_S)


def _outcome(
    label: str,
    pid: int,
    policy: StopPolicy,
    waited: float,
    now: float,
    last_cpu: dict[str, tuple[float | None, float]],
    probe: ProcessProbe,
) -> StopOutcome | None:
    """How the wait for one process ends now, or None while it goes on."""
    if not probe.alive(pid):
        return StopOutcome(True, waited, "exited")
    if waited >= policy.timeout_s:
        return StopOutcome(False, waited, "timed out")
    cpu, since = last_cpu[label]
    current = probe.cpu_seconds(pid)
    if current != cpu:
        last_cpu[label] = (current, now)
    elif now - since >= policy.stall_s:
        return StopOutcome(False, waited, "stalled")
    return None


class ProcProbe:
    """The real process table (/proc) and clock."""

    def __init__(self, alive: Callable[[int], bool]) -> None:
        self._alive = alive

    def alive(self, pid: int) -> bool:
        return self._alive(pid)

    def cpu_seconds(self, pid: int) -> float | None:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, IndexError, ProcessLookupError):
            return None
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime + stime

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def report_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def describe(label: str, outcome: StopOutcome) -> str:
    """Why a node was killed, for the command's output."""
    if outcome.reason == "stalled":
        return f"{label} stopped running (no CPU time used) {outcome.waited_s:.0f} s after SIGTERM; it was killed"
    return f"{label} did not stop within {outcome.waited_s:.0f} s; it was killed"


def stop_nodes(
    nodes: Mapping[str, tuple[int, str]],
    timeout_s: float | None = None,
    report: Callable[[str], object] = report_to_stderr,
    probe: ProcessProbe | None = None,
) -> dict[str, StopOutcome]:
    """SIGTERM every node of `nodes` (label -> (pid, role)) at once, wait for them to exit cleanly (each up to
    `timeout_s`, else its role's default), and SIGKILL those that did not."""
    for pid, _role in nodes.values():
        terminate(pid)
    pids = {label: pid for label, (pid, _role) in nodes.items()}
    policies = {
        label: StopPolicy(timeout_s if timeout_s is not None else default_timeout_s(role))
        for label, (_pid, role) in nodes.items()
    }
    outcomes = wait_for_exits(pids, policies, probe or ProcProbe(is_alive), report)
    for label, outcome in outcomes.items():
        if outcome.exited:
            wait_exit(pids[label], 1.0)  # reap it if it is our child
        else:
            kill(pids[label])
    return outcomes
