"""`minikafka demo`: the whole story on one machine.

A fresh run directory; a 3-controller + 3-broker cluster of real processes (simulated page cache on); a topic with
3 partitions, RF 3, min.insync.replicas 2; an acks=all producer writing its history; the leader of partition 0
killed mid-run; a follower rebooted losing its unflushed data; everything consumed back; the cluster stopped;
then the history checks (Spark) and a short summary.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from client.admin import AdminClient
from client.consumer import EARLIEST, Consumer
from client.produce_command import generated_value, history_line
from client.producer import DeliveryFailed, Producer, ProducerConfig
from deploy import cluster_commands
from deploy.faults import Faults
from deploy.local_cluster import Cluster, new_run_dir, wait_until

TOPIC = "demo"
SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
    "log.simulate.page.cache": "true",
    "log.flush.interval.ms": "1000",
}


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


async def _produce(cluster: Cluster, records: int, history: Path, kill_after: threading.Event) -> tuple[int, int]:
    producer = Producer(cluster.bootstrap_servers, ProducerConfig(acks=-1, delivery_timeout_ms=60000))
    acknowledged = failed = 0
    with history.open("w", encoding="utf-8") as out:

        async def track(value: bytes, sent: float, future: asyncio.Future) -> None:
            nonlocal acknowledged, failed
            metadata = failure = None
            try:
                metadata = await future
                acknowledged += 1
            except DeliveryFailed as error:
                failure = error
                failed += 1
            out.write(history_line(TOPIC, None, metadata, value, -1, failure, (time.monotonic() - sent) * 1000) + "\n")

        tasks = []
        for index in range(records):
            value = generated_value("demo", index, 64)
            tasks.append(asyncio.ensure_future(track(value, time.monotonic(), await producer.send(TOPIC, value))))
            if index == records // 3:
                kill_after.set()
            if index % 200 == 0:
                await asyncio.sleep(0.01)  # a steady stream rather than one burst
        await asyncio.gather(*tasks)
    await producer.close()
    return acknowledged, failed


async def _consume_all(cluster: Cluster, out: Path) -> int:
    consumer = Consumer(cluster.bootstrap_servers)
    await consumer.assign(TOPIC, None, EARLIEST)
    count = idle = 0
    with out.open("w", encoding="utf-8") as stream:
        while idle < 10:
            records = await consumer.poll()
            idle = 0 if records else idle + 1
            for record in records:
                stream.write(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
            count += len(records)
    await consumer.close()
    return count


def _failover_ms(history: Path, killed_at: datetime) -> float | None:
    for line in history.read_text().splitlines():
        entry = json.loads(line)
        if entry["partition"] != 0 or entry["error"] is not None:
            continue
        ts = datetime.strptime(entry["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
        if ts > killed_at:
            return (ts - killed_at).total_seconds() * 1000
    return None


def run_demo(records: int = 20000, analyze: bool = True, log: callable = print) -> DemoSummary:
    run_dir = new_run_dir()
    log(f"starting a 3+3 cluster in {run_dir} ...")
    cluster = cluster_commands.up(run_dir, 3, 3, SETTINGS)
    try:
        admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=10)
        admin.create_topic(TOPIC, 3, 3, {"min.insync.replicas": "2"})
        admin.wait_for_topic(TOPIC, 30)
        history = run_dir / "history" / "produce-demo.jsonl"
        kill_now = threading.Event()
        faults_done: dict[str, object] = {}

        def inject() -> None:
            kill_now.wait(120)
            partition = admin.describe_topics([TOPIC])[0].partitions[0]
            faults_done["leader"] = partition.leader
            faults_done["killed_at"] = datetime.now(UTC)
            log(f"SIGKILL broker {partition.leader}, the leader of {TOPIC}-0 ...")
            Faults(cluster).kill(partition.leader)
            wait_until(lambda: admin.describe_topics([TOPIC])[0].partitions[0].leader not in (-1, partition.leader), 30)
            follower = next(
                r
                for r in partition.replicas
                if r not in (partition.leader, admin.describe_topics([TOPIC])[0].partitions[0].leader)
            )
            faults_done["follower"] = follower
            log(f"reboot broker {follower} losing its unflushed data ...")
            Faults(cluster).reboot(follower, lose_unflushed=True)
            Faults(cluster).start(partition.leader)

        injector = threading.Thread(target=inject, daemon=True)
        injector.start()
        log(f"producing {records} records with acks=all ...")
        acknowledged, failed = asyncio.run(_produce(cluster, records, history, kill_now))
        injector.join(120)
        wait_until(lambda: all(len(p.isr) == 3 for p in admin.describe_topics([TOPIC])[0].partitions), 60)
        log("consuming everything back ...")
        consumed = asyncio.run(_consume_all(cluster, run_dir / "history" / "consume-final.jsonl"))
    finally:
        log("stopping the cluster ...")
        cluster_commands.down(cluster)
    acked_rows = [json.loads(line) for line in history.read_text().splitlines()]
    read = {
        (r["partition"], r["offset"]): r["value"]
        for r in map(json.loads, (run_dir / "history" / "consume-final.jsonl").read_text().splitlines())
    }
    lost = sum(1 for a in acked_rows if a["error"] is None and read.get((a["partition"], a["offset"])) != a["value"])
    killed_at = faults_done.get("killed_at")
    report = verdicts = passed = None
    if analyze:
        log("running the Spark analysis ...")
        from deploy.analysis.report import analyze_run

        analysis = analyze_run(run_dir)
        report = Path(analysis["report"])
        verdicts = verdict_line(analysis)
        passed = bool(analysis["passed"])
    return DemoSummary(
        run_dir,
        acknowledged,
        failed,
        consumed,
        lost,
        int(faults_done.get("leader", -1)),
        int(faults_done.get("follower", -1)),
        _failover_ms(history, killed_at) if isinstance(killed_at, datetime) else None,
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
