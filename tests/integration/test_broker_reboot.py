"""A follower rebooted with its unflushed data lost (simulated page cache) re-registers with a new broker epoch and
rejoins the ISR only after catching up, in a new fetch session; nothing acknowledged is lost. Stray partition
directories go at start-up."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import eventually, running_cluster
from test_broker_replication import consume_all

from minikafka.client.admin import AdminClient
from minikafka.client.producer import Producer, ProducerConfig
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster, wait_until

pytestmark = pytest.mark.integration

SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "log.simulate.page.cache": "true",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One run for the module: each test works on a topic of its own and leaves every broker it stopped running."""
    with running_cluster(tmp_path_factory.mktemp("reboot") / "run", **SETTINGS) as started:
        yield started


def unfenced(admin: AdminClient, broker_id: int) -> bool:
    return any(b.broker_id == broker_id and not b.fenced for b in admin.describe_cluster().brokers)


def event_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def produce(bootstrap: list[str], topic: str, count: int, prefix: str) -> list[tuple[int, str]]:
    producer = Producer(bootstrap, ProducerConfig(acks=-1))
    futures = [
        (f"{prefix}-{i}", await producer.send(topic, f"{prefix}-{i}".encode(), partition=0)) for i in range(count)
    ]
    acked = [((await future).offset, value) for value, future in futures]
    await producer.close()
    return acked


def test_follower_losing_unflushed_data_rejoins_after_catching_up(cluster: Cluster) -> None:
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    admin.create_topic("orders", partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    eventually(lambda: len(admin.describe_topics(["orders"])[0].partitions[0].isr) == 3, 20, "full ISR")
    acked = asyncio.run(produce(cluster.bootstrap_servers, "orders", 3000, "before"))
    partition = admin.describe_topics(["orders"])[0].partitions[0]
    follower = next(r for r in partition.replicas if r != partition.leader)
    epochs = {b.broker_id: b.broker_epoch for b in admin.describe_cluster().brokers}

    Faults(cluster).reboot(follower, lose_unflushed=True)
    log = cluster.node(follower).events_path
    eventually(lambda: '"event":"log_recovered"' in log.read_text(), 20, "the rebooted follower's recovery")
    eventually(
        lambda: {b.broker_id: b.broker_epoch for b in admin.describe_cluster().brokers}[follower] > epochs[follower],
        30,
        "a new broker epoch",
    )
    acked += asyncio.run(produce(cluster.bootstrap_servers, "orders", 1000, "after"))
    eventually(
        lambda: follower in admin.describe_topics(["orders"])[0].partitions[0].isr,
        30,
        "the rebooted follower back in the ISR",
    )

    recovered = [
        e
        for e in map(json.loads, log.read_text().splitlines())
        if e["event"] == "log_recovered" and e["partition"] == "orders-0"
    ]
    assert recovered and recovered[0]["log_end_offset"] < 3000, "the reboot really lost unflushed records"
    read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked)))
    lost = [a for a in acked if read.get(a[0]) != a[1]]
    assert not lost
    # It joined only once caught up: its expansion was proposed at or above the HWM.
    leader_log = cluster.node(admin.describe_topics(["orders"])[0].partitions[0].leader).events_path
    expansions = [
        e
        for e in map(json.loads, leader_log.read_text().splitlines())
        if e["event"] == "isr_expand_proposed" and e["adding"] == follower
    ]
    assert expansions and all(e["fetch_offset"] >= e["high_watermark"] for e in expansions)
    # The follower fetched in incremental fetch sessions (KIP-227): one before the reboot and a new one after,
    # since a restarted fetcher starts with a full fetch.
    sessions = [
        e
        for e in map(json.loads, leader_log.read_text().splitlines())
        if e["event"] == "fetch_session_created" and e["replica_id"] == follower
    ]
    assert len(sessions) >= 2 and len({e["session_id"] for e in sessions}) == len(sessions)
    print(
        json.dumps(
            {
                "acknowledged": len(acked),
                "lost": len(lost),
                "follower": follower,
                "log_end_offset_after_reboot": recovered[0]["log_end_offset"],
            }
        )
    )


def test_stray_partition_is_deleted_at_start_up_and_assigned_one_kept(cluster: Cluster) -> None:
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    admin.create_topic("kept", assignment=[[1, 2]])
    eventually(lambda: (cluster.node(1).data_dir / "kept-0").exists(), 20, "kept-0 on broker 1")
    Faults(cluster).stop(1)
    stray = cluster.node(1).data_dir / "gone-0"
    stray.mkdir()
    (stray / "partition.metadata").write_text("version: 0\ntopic_id: 6b1a6a42-9d2b-4c5e-8c55-0f0f0f0f0f0f\n")
    Faults(cluster).start(1)
    assert wait_until(lambda: not stray.exists(), 30)
    assert (cluster.node(1).data_dir / "kept-0").exists()

    def deleted_event() -> bool:
        # The directory is renamed away before the event is written: wait for the line, not just the path.
        events = [json.loads(line) for line in cluster.node(1).events_path.read_text().splitlines()]
        return any(e["event"] == "stray_partition_deleted" and e["partition"] == "gone-0" for e in events)

    eventually(deleted_event, 10, "stray_partition_deleted for gone-0")
    eventually(lambda: unfenced(admin, 1), 30, "broker 1 unfenced again")  # the next test's topic needs all three


def test_sigterm_is_a_controlled_shutdown_that_moves_leadership_first(cluster: Cluster) -> None:
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    admin.create_topic("sigterm", partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    eventually(lambda: len(admin.describe_topics(["sigterm"])[0].partitions[0].isr) == 3, 20, "full ISR")
    leader = admin.describe_topics(["sigterm"])[0].partitions[0].leader
    # The run is shared: earlier tests stopped brokers too, so only the events from this stop on count.
    seen = {node.node_id: len(event_lines(node.events_path)) for node in (cluster.node(leader), *cluster.controllers)}
    Faults(cluster).stop(leader, timeout_s=15)  # raises if it had to be killed
    partition = admin.describe_topics(["sigterm"])[0].partitions[0]
    assert partition.leader not in (-1, leader)
    broker_events = [e["event"] for e in event_lines(cluster.node(leader).events_path)[seen[leader] :]]
    assert broker_events.index("controlled_shutdown_started") < broker_events.index("broker_stopped")
    controller_events = [e for c in cluster.controllers for e in event_lines(c.events_path)[seen[c.node_id] :]]
    assert any(e["event"] == "controlled_shutdown_requested" and e["broker_id"] == leader for e in controller_events)
