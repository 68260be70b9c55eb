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
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import eventually, running_cluster

from minikafka.client.admin import AdminClient
from minikafka.client.consumer import EARLIEST, Consumer
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster, is_alive

pytestmark = pytest.mark.integration

FAST = {
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
}
VICTIM = 1
VALUE_BYTES = 1000


@pytest.fixture(scope="module")
def _fast_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    settings = {**FAST, "log.retention.check.interval.ms": "200"}  # the retention test's; the others' logs keep all
    with running_cluster(tmp_path_factory.mktemp("storage") / "run", controllers=1, brokers=3, **settings) as cluster:
        yield cluster


@pytest.fixture
def fast_cluster(_fast_run: Cluster) -> Iterator[Cluster]:
    """The module's 1+3 run, shared by the tests on the brokers' own disks: each uses a topic of its own, and every
    broker a test stopped (or a disk fault made exit; a restart clears the fault) runs again, unfenced, after it."""
    yield _fast_run
    run = _fast_run
    admin = AdminClient(run.bootstrap_controllers, run.bootstrap_servers, timeout_s=5, tls=run.admin_tls)
    stopped = [b.node_id for b in _fast_run.brokers if not is_alive(_fast_run.pids[b.node_id])]
    for node_id in stopped:
        Faults(_fast_run).start(node_id)

    def all_unfenced() -> bool:
        return {b.broker_id for b in admin.describe_cluster().brokers if not b.fenced} >= {1, 2, 3}

    eventually(all_unfenced, 60, f"brokers {stopped} unfenced again")


def events_since(path: Path, marks: dict[Path, int]) -> list[dict]:
    """The events of `path` written after `marks` (taken by `mark`): the run is shared by the module's tests."""
    return events(path)[marks.get(path, 0) :]


def mark(*paths: Path) -> dict[Path, int]:
    return {path: len(events(path)) if path.exists() else 0 for path in paths}


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


async def produce(bootstrap: list[str], count: int, topic: str = "orders") -> list[dict]:
    producer = Producer(bootstrap, ProducerConfig(acks=-1, delivery_timeout_ms=60000, request_timeout_ms=5000))
    futures = []
    for index in range(count):
        value = f"v-{index:06d}-".encode().ljust(VALUE_BYTES, b"x")
        futures.append((value, await producer.send(topic, value, partition=0)))
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


async def consume_all(bootstrap: list[str], expected: int, topic: str = "orders") -> dict[int, bytes]:
    consumer = Consumer(bootstrap)
    await consumer.assign(topic, [0], EARLIEST)
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
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
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


def flip_a_value_byte(data_dir: Path, marker: bytes, partition: str) -> None:
    """Flip one byte of the record value that starts with `marker` in the partition's segment files."""
    for segment in sorted((data_dir / partition).glob("*.log")):
        content = bytearray(segment.read_bytes())
        at = content.find(marker)
        if at >= 0:
            content[at + len(marker) + 10] ^= 0x01
            segment.write_bytes(bytes(content))
            return
    raise AssertionError(f"{marker!r} is in no segment of {data_dir}")


def test_a_flipped_byte_in_a_follower_that_becomes_leader_is_never_served(fast_cluster: Cluster) -> None:
    cluster, topic = fast_cluster, "flipped"
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    # Replica order makes broker 3 the next leader when broker 1 goes.
    admin.create_topic(topic, assignment=[[1, 3, 2]], configs={"min.insync.replicas": "2"})
    eventually(lambda: admin.describe_topics([topic])[0].partitions[0].leader == 1, 20, "broker 1 leads")
    acked = [o for o in asyncio.run(produce(cluster.bootstrap_servers, 1000, topic)) if o["error"] is None]
    eventually(lambda: len(admin.describe_topics([topic])[0].partitions[0].isr) == 3, 30, "a full ISR")

    faults = Faults(cluster)
    faults.stop(3)  # a clean shutdown: its next start runs no recovery scan
    flip_a_value_byte(cluster.node(3).data_dir, b"v-000500-", f"{topic}-0")
    before = mark(cluster.node(3).events_path)
    faults.start(3)
    eventually(lambda: 3 in admin.describe_topics([topic])[0].partitions[0].isr, 60, "broker 3 in the ISR")
    faults.stop(1)
    eventually(lambda: admin.describe_topics([topic])[0].partitions[0].leader == 3, 30, "broker 3 leads")

    read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked), topic))
    damaged = [o["offset"] for o in acked if read.get(o["offset"]) != o["value"]]
    assert not damaged, f"{len(damaged)} acknowledged records lost or damaged, e.g. offsets {damaged[:5]}"
    corrupt = [e for e in events_since(cluster.node(3).events_path, before) if e["event"] == "log_batch_corrupt"]
    assert corrupt and corrupt[0]["offset"] <= 500, corrupt
    assert admin.describe_topics([topic])[0].partitions[0].leader == 2


async def earliest_offset(bootstrap: list[str], topic: str) -> int:
    consumer = Consumer(bootstrap)
    try:
        return await consumer.list_offset(topic, 0, EARLIEST)
    finally:
        await consumer.close()


async def consume_from_start(bootstrap: list[str], end: int, topic: str) -> dict[int, bytes]:
    consumer = Consumer(bootstrap)
    await consumer.assign(topic, [0], EARLIEST)
    read: dict[int, bytes] = {}
    idle = 0
    while idle < 20 and (not read or max(read) < end - 1):
        records = await consumer.poll()
        idle = 0 if records else idle + 1
        read.update((r.offset, r.value) for r in records)
    await consumer.close()
    return read


def test_retention_deletes_old_segments_and_a_follower_down_meanwhile_catches_up(fast_cluster: Cluster) -> None:
    cluster, topic = fast_cluster, "retained"
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    configs = {"min.insync.replicas": "2", "segment.bytes": "50000", "retention.bytes": "150000"}
    admin.create_topic(topic, assignment=[[1, 2, 3]], configs=configs)
    eventually(lambda: admin.describe_topics([topic])[0].partitions[0].leader == 1, 20, "broker 1 leads")
    first = [o for o in asyncio.run(produce(cluster.bootstrap_servers, 50, topic)) if o["error"] is None]
    eventually(lambda: len(admin.describe_topics([topic])[0].partitions[0].isr) == 3, 30, "a full ISR")
    faults = Faults(cluster)
    faults.stop(3)
    acked = first + [o for o in asyncio.run(produce(cluster.bootstrap_servers, 1000, topic)) if o["error"] is None]
    end = max(o["offset"] for o in acked) + 1

    earliest = lambda: asyncio.run(earliest_offset(cluster.bootstrap_servers, topic))  # noqa: E731
    eventually(lambda: earliest() > 50, 30, "the log start moves")
    start = earliest()
    leader_dir = cluster.node(1).data_dir / f"{topic}-0"
    assert sum(p.stat().st_size for p in leader_dir.glob("*.log")) < 150000 + 50000
    assert min(int(p.stem) for p in leader_dir.glob("*.log")) == start
    deleted = [e for e in events(cluster.node(1).events_path) if e["event"] == "log_segments_deleted"]
    assert any(e.get("partition", f"{topic}-0") == f"{topic}-0" for e in deleted)

    before = mark(cluster.node(3).events_path)
    faults.start(3)
    eventually(lambda: 3 in admin.describe_topics([topic])[0].partitions[0].isr, 60, "broker 3 in the ISR")
    recovered = [
        e for e in events_since(cluster.node(3).events_path, before) if e["event"] == "follower_offset_out_of_range"
    ]
    assert recovered and recovered[0]["fetch_offset"] == 50 and recovered[0]["leader_log_start_offset"] > 50
    # Read back from broker 3 alone: it holds exactly the leader's records from the new log start on.
    faults.stop(1)
    faults.stop(2)
    eventually(lambda: admin.describe_topics([topic])[0].partitions[0].leader == 3, 30, "broker 3 leads")
    read = asyncio.run(consume_from_start(cluster.bootstrap_servers, end, topic))
    assert min(read) >= start
    kept = [o for o in acked if o["offset"] >= min(read)]
    damaged = [o["offset"] for o in kept if read.get(o["offset"]) != o["value"]]
    assert kept and not damaged, f"{len(damaged)} retained acknowledged records missing, e.g. {damaged[:5]}"


def fault_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka.launcher", "fault", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("kind", ["disk-full", "disk-error"])
def test_fault_disk_full_and_disk_error_take_the_brokers_log_dir_offline(fast_cluster: Cluster, kind: str) -> None:
    cluster, topic = fast_cluster, f"faulted-{kind}"
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    admin.create_topic(topic, assignment=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
    eventually(lambda: admin.describe_topics([topic])[0].partitions[0].leader == 1, 20, "broker 1 leads")
    acked = [o for o in asyncio.run(produce(cluster.bootstrap_servers, 200, topic)) if o["error"] is None]

    faults_log = cluster.run_dir / "logs" / "faults.jsonl"
    before = mark(cluster.node(1).events_path, faults_log)
    result = fault_cli(kind, "1", "--dir", str(cluster.run_dir))
    assert result.returncode == 0 and result.stdout.strip() == f"{kind} 1: done", result
    eventually(lambda: not is_alive(cluster.pids[1]), 30, "broker 1 exits")
    eventually(lambda: admin.describe_topics([topic])[0].partitions[0].leader in (2, 3), 30, "a new leader")
    (offline,) = [e for e in events_since(cluster.node(1).events_path, before) if e["event"] == "log_dir_offline"]
    assert f"injected {kind}" in offline["reason"]
    injected = [e for e in events_since(faults_log, before) if e["fault"] == kind]
    assert injected and injected[0]["event"] == "fault_injected" and injected[0]["target_id"] == 1
    read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked), topic))
    assert all(read.get(o["offset"]) == o["value"] for o in acked)


def test_fault_corrupt_flips_a_byte_that_is_never_served(fast_cluster: Cluster) -> None:
    cluster, topic = fast_cluster, "corrupted"
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    admin.create_topic(topic, assignment=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
    eventually(lambda: admin.describe_topics([topic])[0].partitions[0].leader == 1, 20, "broker 1 leads")
    acked = [o for o in asyncio.run(produce(cluster.bootstrap_servers, 300, topic)) if o["error"] is None]
    eventually(lambda: len(admin.describe_topics([topic])[0].partitions[0].isr) == 3, 30, "a full ISR")

    faults_log = cluster.run_dir / "logs" / "faults.jsonl"
    before = mark(cluster.node(1).events_path, faults_log)
    result = fault_cli("corrupt", "1", f"{topic}-0", "--offset", "150", "--dir", str(cluster.run_dir))
    assert result.returncode == 0 and result.stdout.strip() == "corrupt 1: done", result
    (injected,) = [e for e in events_since(faults_log, before) if e["fault"] == "corrupt"]
    assert injected["partition"] == f"{topic}-0" and injected["offset"] <= 150

    read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked), topic))
    damaged = [o["offset"] for o in acked if read.get(o["offset"]) != o["value"]]
    assert not damaged, f"{len(damaged)} acknowledged records lost or damaged, e.g. offsets {damaged[:5]}"
    assert any(e["event"] == "log_batch_corrupt" for e in events_since(cluster.node(1).events_path, before))
    missing = fault_cli("corrupt", "2", "nosuch-0", "--dir", str(cluster.run_dir))
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


def test_a_controller_whose_metadata_log_cannot_be_written_halts_and_another_leads(tmp_path: Path) -> None:
    """Kafka halts a controller on a metadata-log write error: the active controller's disk fills, it exits 1 with
    one line, a new quorum leader is elected and every topic whose creation was acknowledged is still there."""
    run_dir = tmp_path / "run"
    with contextlib.ExitStack() as mounts:
        for node_id in (101, 102, 103):
            mounts.enter_context(tmpfs(run_dir / f"controller-{node_id}" / "data", "4m"))
        cluster = mounts.enter_context(running_cluster(run_dir, controllers=3, brokers=1, **FAST))
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        old_leader = admin.describe_quorum()["leader_id"]
        victim = cluster.node(old_leader)
        fill_up(victim.data_dir)

        created: list[str] = []

        def the_leader_exits() -> bool:
            # Each creation appends to the metadata log: one lands on the full disk's next page.
            name = f"t{len(created)}"
            with contextlib.suppress(Exception):
                admin.create_topic(name, 1, 1)
                created.append(name)
            return not is_alive(cluster.pids[old_leader])

        eventually(the_leader_exits, 60, "the active controller exits")
        assert (
            victim.stderr_path.read_text()
            .strip()
            .splitlines()[-1]
            .startswith("minikafka controller: error: KAFKA_STORAGE_ERROR")
        ), victim.stderr_path.read_text()
        assert "Traceback" not in victim.stderr_path.read_text()
        mine = events(victim.events_path)
        assert any(e["event"] == "metadata_log_write_failed" for e in mine)
        assert any(e["event"] == "controller_halted" for e in mine)

        new_leader = eventually(lambda: admin.describe_quorum()["leader_id"] not in (-1, old_leader) and
                                admin.describe_quorum()["leader_id"], 30, "a new quorum leader")  # fmt: skip
        assert new_leader != old_leader
        admin.create_topic("after", 1, 1)
        eventually(lambda: {t.name for t in admin.describe_topics()} >= {*created, "after"}, 20, "every topic created")
