"""A broker whose disk fills up, with real processes and a real full file system (a small tmpfs as the broker's log
dir; needs root): its log dir goes offline, it tells the controller, leadership moves at once, it shuts down with
a one-line error, every acknowledged record is read back intact from the new leader, and a restart on the still
full disk ends with a one-line error, not a traceback."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import eventually, running_cluster

from client.admin import AdminClient
from client.consumer import EARLIEST, Consumer
from client.producer import DeliveryFailed, Producer, ProducerConfig
from deploy.faults import Faults
from deploy.local_cluster import is_alive

pytestmark = pytest.mark.integration

FAST = {
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
}
VICTIM = 1
VALUE_BYTES = 1000


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = (
        os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
        ).returncode
        == 0
    )
    if not mounted:
        pytest.skip("needs root and tmpfs to give a broker a small file system")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def fill_up(directory: Path) -> None:
    """Take the last free bytes of the file system, so the disk stays full."""
    with contextlib.suppress(OSError), (directory / "filler").open("wb") as filler:
        while True:
            filler.write(b"\0" * 4096)
            filler.flush()


async def produce(bootstrap: list[str], count: int) -> list[dict]:
    producer = Producer(bootstrap, ProducerConfig(acks=-1, delivery_timeout_ms=60000, request_timeout_ms=5000))
    futures = []
    for index in range(count):
        value = f"v-{index:06d}-".encode().ljust(VALUE_BYTES, b"x")
        futures.append((value, await producer.send("orders", value, partition=0)))
        if index % 200 == 0:
            await asyncio.sleep(0)
    outcomes = []
    for value, future in futures:
        try:
            outcomes.append({"value": value, "offset": (await future).offset, "error": None})
        except DeliveryFailed as error:
            outcomes.append({"value": value, "offset": None, "error": error.code.name})
    await producer.close()
    return outcomes


async def consume_all(bootstrap: list[str], expected: int) -> dict[int, bytes]:
    consumer = Consumer(bootstrap)
    await consumer.assign("orders", [0], EARLIEST)
    read: dict[int, bytes] = {}
    idle = 0
    while idle < 20 and len(read) < expected:
        records = await consumer.poll()
        idle = 0 if records else idle + 1
        read.update((r.offset, r.value) for r in records)
    await consumer.close()
    return read


def test_a_full_disk_takes_the_log_dir_offline_and_leadership_moves(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with (
        tmpfs(run_dir / f"broker-{VICTIM}" / "data", "3m") as data,
        running_cluster(run_dir, controllers=1, brokers=3, **FAST) as cluster,
    ):
        admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5)
        admin.create_topic("orders", assignment=[[VICTIM, 2, 3]], configs={"min.insync.replicas": "2"})
        eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].leader == VICTIM, 20, "the victim leads")
        victim = cluster.node(VICTIM)

        outcomes = asyncio.run(produce(cluster.bootstrap_servers, 6000))  # 6 MB into 3 MB
        acked = [o for o in outcomes if o["error"] is None]
        assert len(acked) > 3000, f"only {len(acked)} acknowledged"
        eventually(lambda: not is_alive(cluster.pids[VICTIM]), 30, "the victim broker exits")
        after = admin.describe_topics(["orders"])[0].partitions[0]
        assert after.leader in (2, 3) and VICTIM not in after.isr

        mine = events(victim.events_path)
        (offline,) = [e for e in mine if e["event"] == "log_dir_offline"]
        assert offline["log_dir"] == str(data), offline
        assert "No space left" in offline["reason"] or "short write" in offline["reason"], offline
        assert any(e["event"] == "broker_shutting_down" and e["reason"] == "no online log dir" for e in mine)
        fenced = [e for e in events(cluster.controllers[0].events_path) if e["event"] == "broker_fenced"]
        # Fenced on its own word, not by the session timing out.
        assert [e["reason"] for e in fenced if e.get("broker_id") == VICTIM] == ["offline_log_dirs"], fenced
        stderr = victim.stderr_path.read_text()
        assert "Traceback" not in stderr and "KAFKA_STORAGE_ERROR" in stderr, stderr[-2000:]

        read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked)))
        lost = [o["offset"] for o in acked if read.get(o["offset"]) != o["value"]]
        assert not lost, f"{len(lost)} acknowledged records lost or damaged, e.g. offsets {lost[:5]}"

        # Restarted on a disk that is still full, it exits with one line naming the error.
        fill_up(data)
        before = victim.stderr_path.read_text()
        Faults(cluster).start(VICTIM)
        eventually(lambda: not is_alive(cluster.pids[VICTIM]), 60, "the restarted victim exits")
        restarted = victim.stderr_path.read_text()[len(before) :]
        assert "Traceback" not in restarted and "KAFKA_STORAGE_ERROR" in restarted, restarted[-2000:]
