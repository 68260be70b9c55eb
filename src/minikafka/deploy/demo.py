"""`minikafka demo`: the whole story on one machine.

A fresh run directory; a 3-controller + 3-broker cluster of real processes (simulated page cache on); a topic with
3 partitions, RF 3, min.insync.replicas 2; an acks=all producer writing its history; the leader of partition 0
killed mid-run; a follower rebooted losing its unflushed data; everything consumed back; the cluster stopped;
then the history checks (Spark) and a short summary; then the kip-903 scenario with its guard on and off, both
verdicts side by side.
"""

from __future__ import annotations

import asyncio
import json
import textwrap
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from minikafka.client.admin import AdminClient
from minikafka.common.cli_support import run_event_loop
from minikafka.deploy import cluster_commands
from minikafka.deploy.faults import FAULT_RUN_SETTINGS, Faults
from minikafka.deploy.local_cluster import Cluster, new_run_dir, wait_until
from minikafka.deploy.scenario.model import ScenarioOutcome
from minikafka.deploy.scenario.registry import load
from minikafka.deploy.scenario.runner import run_scenario
from minikafka.deploy.workload import (
    ProduceCounts,
    ProducerPlan,
    consume_to_file,
    lost_acknowledged,
    produce_with_history,
    wait_for_full_isrs,
)

TOPIC = "demo"
Log = Callable[[str], None]


@dataclass
class DemoSummary:
    run_dir: Path
    acknowledged: int
    failed: int
    consumed: int
    lost: int
    killed_leader: int
    rebooted_follower: int
    failover_ms: float | None
    report: Path | None
    verdicts: str | None = None
    analysis_passed: bool | None = None

    def lines(self) -> list[str]:
        failover = f"{self.failover_ms:.0f} ms" if self.failover_ms is not None else "n/a"
        return [
            f"run directory:      {self.run_dir}",
            f"acknowledged:       {self.acknowledged} (acks=all; {self.failed} not acknowledged)",
            f"consumed:           {self.consumed}",
            f"lost:               {self.lost}",
            f"faults:             SIGKILL of broker {self.killed_leader} (leader of {TOPIC}-0), reboot of broker "
            f"{self.rebooted_follower} losing its unflushed data",
            f"failover:           {failover} from the kill to the first acknowledged write to {TOPIC}-0",
            f"event logs:         {self.run_dir / 'logs'}",
            f"client histories:   {self.run_dir / 'history'}",
            f"invariants:         {self.verdicts if self.verdicts else 'analysis not run'}",
            f"report:             {self.report if self.report else 'analysis not run'}",
        ]


def _ack_after_ms(entry: dict[str, object], killed_at: datetime) -> float | None:
    """How long after the kill `entry` was acknowledged, if it is a write to partition 0 sent after the kill (None
    otherwise). A record sent before it may have been answered by the killed leader an instant before it died, and
    counting that answer would report a failover of a millisecond."""
    if entry["partition"] != 0 or entry["error"] is not None:
        return None
    ts = datetime.strptime(str(entry["ts"]), "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    sent = ts - timedelta(milliseconds=float(str(entry["latency_ms"])))
    return (ts - killed_at).total_seconds() * 1000 if sent > killed_at else None


def _failover_ms(history: Path, killed_at: datetime) -> float | None:
    for line in history.read_text().splitlines():
        delay = _ack_after_ms(json.loads(line), killed_at)
        if delay is not None:
            return delay
    return None


def _acknowledged_since(history: Path, killed_at: datetime) -> Callable[[], bool]:
    """A condition for `wait_until`: the growing history holds an acknowledged write after the kill. Each poll reads
    on from where the last one stopped, and only whole lines (the workload is still writing)."""
    position = 0

    def seen() -> bool:
        nonlocal position
        with history.open("rb") as file:
            file.seek(position)
            for line in file:
                if not line.endswith(b"\n"):
                    break
                position += len(line)
                if _ack_after_ms(json.loads(line), killed_at) is not None:
                    return True
        return False

    return seen


@dataclass
class FaultsDone:
    """What the fault thread did, as it did it (read once it has finished or timed out)."""

    leader: int = -1  # the broker killed
    follower: int = -1  # the broker rebooted
    killed_at: datetime | None = None


def _inject_faults(
    cluster: Cluster, admin: AdminClient, history: Path, kill_now: threading.Event, done: FaultsDone, log: Log
) -> None:
    """Once `kill_now` is set: SIGKILL the leader of partition 0, then reboot a follower losing its unflushed data."""
    kill_now.wait(120)
    partition = admin.describe_topics([TOPIC])[0].partitions[0]
    done.leader = partition.leader
    log(f"SIGKILL broker {partition.leader}, the leader of {TOPIC}-0 ...")
    Faults(cluster).kill(partition.leader)
    done.killed_at = killed_at = datetime.now(UTC)  # once the leader is gone: nothing sent later reaches it
    wait_until(lambda: admin.describe_topics([TOPIC])[0].partitions[0].leader not in (-1, partition.leader), 30)
    new_leader = admin.describe_topics([TOPIC])[0].partitions[0].leader
    follower = next(r for r in partition.replicas if r not in (partition.leader, new_leader))
    done.follower = follower
    # Rebooting the last other ISR member before the new leader's first acknowledged write would hold
    # acks=all (min.insync.replicas 2) until it rejoins, and the failover figure would include its reboot.
    wait_until(_acknowledged_since(history, killed_at), 30)
    log(f"reboot broker {follower} losing its unflushed data ...")
    Faults(cluster).reboot(follower, lose_unflushed=True)
    Faults(cluster).start(partition.leader)


async def _client_phases(
    cluster: Cluster,
    admin: AdminClient,
    plan: ProducerPlan,
    injector: threading.Thread,
    kill_now: threading.Event,
    log: Log,
) -> tuple[ProduceCounts, int]:
    """Produce (the injector kills a third of the way in), wait for the faults and full ISRs, consume it all back.

    Every client phase runs on this one event loop: grpc.aio ties its completion queue to the first loop of the
    process, and a second loop would receive completions meant for the closed one (tracebacks on stderr).
    """
    third = (plan.records or 0) // 3
    counts = await produce_with_history(
        cluster.bootstrap_servers, plan, on_sent=lambda index: kill_now.set() if index == third else None
    )
    await asyncio.to_thread(injector.join, 120)
    await asyncio.to_thread(wait_for_full_isrs, admin, TOPIC, 60)
    log("consuming everything back ...")
    final = cluster.run_dir / "history" / "consume-final.jsonl"
    return counts, await consume_to_file(cluster.bootstrap_servers, TOPIC, final)


def run_demo(records: int = 20000, analyze: bool = True, log: Log = print) -> DemoSummary:
    run_dir = new_run_dir()
    log(f"starting a 3+3 cluster in {run_dir} ...")
    cluster = cluster_commands.up(run_dir, 3, 3, FAULT_RUN_SETTINGS)
    history = run_dir / "history" / "produce-demo.jsonl"
    faults_done = FaultsDone()
    try:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=10, tls=cluster.admin_tls
        )
        admin.create_topic(TOPIC, 3, 3, {"min.insync.replicas": "2"})
        admin.wait_for_topic(TOPIC, 30)
        plan = ProducerPlan(TOPIC, "demo", history, records=records)
        kill_now = threading.Event()
        injector = threading.Thread(
            target=_inject_faults, args=(cluster, admin, history, kill_now, faults_done, log), daemon=True
        )
        injector.start()
        log(f"producing {records} records with acks=all ...")
        counts, consumed = run_event_loop(_client_phases(cluster, admin, plan, injector, kill_now, log))
    finally:
        log("stopping the cluster ...")
        cluster_commands.down(cluster)
    lost = lost_acknowledged([history], run_dir / "history" / "consume-final.jsonl")
    killed_at = faults_done.killed_at
    report = verdicts = passed = None
    if analyze:
        log("running the Spark analysis ...")
        from minikafka.deploy.analysis.report import analyze_run

        analysis = analyze_run(run_dir)
        report = Path(analysis["report"])
        verdicts = verdict_line(analysis)
        passed = bool(analysis["passed"])
    return DemoSummary(
        run_dir,
        counts.acknowledged,
        counts.failed,
        consumed,
        lost,
        faults_done.leader,
        faults_done.follower,
        _failover_ms(history, killed_at) if killed_at is not None else None,
        report,
        verdicts,
        passed,
    )


def verdict_line(summary: dict) -> str:
    """E.g. `15 passed, 0 failed (warnings: Duplicates 200)`."""
    counts = {"pass": 0, "fail": 0}
    warnings = []
    for verdict in summary["invariants"]:
        if verdict["verdict"] == "warn":
            warnings.append(f"{verdict['name']} {verdict['violations']}")
        else:
            counts[verdict["verdict"]] += 1
    failed = [v["name"] for v in summary["invariants"] if v["verdict"] == "fail"]
    line = f"{counts['pass']} passed, {counts['fail']} failed" + (f" ({', '.join(failed)})" if failed else "")
    return line + (f"; warnings: {', '.join(warnings)}" if warnings else "")


SCENARIO = "kip-903"
CELL_WIDTH = 58


def run_scenario_pair(log: Log = print) -> list[ScenarioOutcome]:
    """The kip-903 scenario with its guard on, then off, each in a run of its own (no Spark step: the verdict comes
    from the scenario's own final read, which keeps the demo's extra time near a minute)."""
    scenario = load(SCENARIO)
    guard = scenario.guard
    return [
        run_scenario(scenario, new_run_dir(), {guard.key: value}, analyze=False, log=log)
        for value in (guard.on, guard.off)
    ]


def side_by_side(outcomes: list[ScenarioOutcome]) -> list[str]:
    """Both verdicts in two columns: the guard, the verdict, the writes, the event where the runs forked."""

    def column(outcome: ScenarioOutcome) -> list[str]:
        acknowledged = sum(t.acknowledged for t in outcome.tallies)
        lost = sum(t.lost for t in outcome.tallies)
        decisive = outcome.decisive
        held = "HELD" if outcome.verdict.held else "BROKEN"
        return [
            f"{outcome.guard.key}={outcome.guard_value}",
            f"{held} (exit {outcome.verdict.exit_code}{'' if outcome.verdict.as_predicted else ', NOT as predicted'})",
            f"{acknowledged} acknowledged, {lost} lost",
            decisive.sentence.split(": ", 1)[-1] if decisive else "-",
        ]

    labels = ["guard", "verdict", "writes", "decisive event"]
    columns = [column(outcome) for outcome in outcomes]
    lines = [f"scenario {outcomes[0].name}: {outcomes[0].title}"]
    for row, label in enumerate(labels):
        # Long cells (the decisive event, a path) wrap inside their column, so the two runs stay side by side.
        cells = [
            textwrap.wrap(c[row], CELL_WIDTH, break_long_words=False, break_on_hyphens=False) or [""] for c in columns
        ]
        for index in range(max(len(cell) for cell in cells)):
            parts = [cell[index] if index < len(cell) else "" for cell in cells]
            head = f"{label + ':':<16}" if index == 0 else " " * 16
            lines.append(("  " + head + "".join(f"{p:<{CELL_WIDTH + 2}}" for p in parts)).rstrip())
    # A path has no space to wrap at, so two in one row would run together: one line each, under the table.
    for outcome in outcomes:
        report = Path(outcome.run_dir) / "report" / "scenario.md"
        lines.append(f"  {'report:':<16}{report}  ({outcome.guard.key}={outcome.guard_value})")
    return lines
