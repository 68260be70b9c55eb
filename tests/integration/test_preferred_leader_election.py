"""After a leader failover and the old leader's restart, leadership returns to the preferred replica: on its own
within leader.imbalance.check.interval.seconds (auto.leader.rebalance.enable), or at once with
`minikafka leader-election --election-type preferred`; no acknowledged write is lost either way."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster
from test_broker_replication import consume_all

from minikafka.client.admin import AdminClient
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig
from minikafka.deploy.faults import Faults

pytestmark = pytest.mark.integration

SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
}


@contextmanager
def acked_load(bootstrap: list[str]) -> Iterator[dict[int, str]]:
    """acks=all writes to orders-0 in a thread until the block ends; yields {offset: value} of the acknowledged."""
    acked: dict[int, str] = {}
    stopping = threading.Event()

    async def produce() -> None:
        producer = Producer(bootstrap, ProducerConfig(acks=-1, delivery_timeout_ms=60_000, request_timeout_ms=5_000))
        index = 0
        try:
            while not stopping.is_set():
                batch = []
                for _ in range(20):
                    value = f"v-{index:07d}"
                    index += 1
                    batch.append((value, await producer.send("orders", value.encode(), partition=0)))
                for value, future in batch:
                    try:
                        acked[(await future).offset] = value
                    except DeliveryFailed:
                        pass  # not acknowledged: nothing promised
        finally:
            await producer.close()

    thread = threading.Thread(target=lambda: asyncio.run(produce()), daemon=True)
    thread.start()
    try:
        yield acked
    finally:
        stopping.set()
        thread.join(timeout=90)


def create_orders(admin: AdminClient) -> None:
    admin.create_topic("orders", assignment=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
    eventually(lambda: len(admin.describe_topics(["orders"])[0].partitions[0].isr) == 3, 20, "full ISR")


def fail_over_and_return(cluster, admin: AdminClient) -> int:  # type: ignore[no-untyped-def]
    """Kill the preferred leader 1, wait for another leader, restart 1 and wait until it is back in the ISR."""
    Faults(cluster).kill(1)
    failed_over = eventually(
        lambda: (p := admin.describe_topics(["orders"])[0].partitions[0]).leader not in (-1, 1) and p, 20, "failover"
    )
    Faults(cluster).start(1)
    eventually(lambda: 1 in admin.describe_topics(["orders"])[0].partitions[0].isr, 30, "broker 1 back in the ISR")
    return failed_over.leader_epoch


def assert_nothing_lost(cluster, acked: dict[int, str]) -> None:  # type: ignore[no-untyped-def]
    assert len(acked) > 100, "the load really ran"
    read = asyncio.run(consume_all(cluster.bootstrap_servers, max(acked) + 1))
    assert [offset for offset, value in acked.items() if read.get(offset) != value] == []


def elections(cluster) -> list[dict]:  # type: ignore[no-untyped-def, type-arg]
    return [
        e
        for c in cluster.controllers
        for e in map(json.loads, c.events_path.read_text().splitlines())
        if e["event"] == "leader_elected" and e.get("election_type") == "PREFERRED"
    ]


def test_auto_rebalance_returns_leadership_to_the_preferred_replica(tmp_path: Path) -> None:
    settings = {**SETTINGS, "leader.imbalance.check.interval.seconds": "2"}
    with running_cluster(tmp_path / "run", **settings) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        create_orders(admin)
        with acked_load(cluster.bootstrap_servers) as acked:
            eventually(lambda: len(acked) > 50, 20, "acknowledged writes before the failover")
            failover_epoch = fail_over_and_return(cluster, admin)
            back = eventually(
                lambda: (p := admin.describe_topics(["orders"])[0].partitions[0]).leader == 1 and p,
                20,
                "the preferred replica leading again",
            )
            assert back.leader_epoch > failover_epoch
            acked_before = len(acked)
            eventually(lambda: len(acked) > acked_before + 50, 20, "writes acknowledged by the restored leader")
        assert [e["reason"] for e in elections(cluster)] == ["auto_leader_rebalance"]
        assert_nothing_lost(cluster, acked)


def test_leader_election_command_returns_leadership_at_once(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", **SETTINGS, **{"auto.leader.rebalance.enable": "false"}) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        where = ["--bootstrap-controller", ",".join(cluster.bootstrap_controllers)]
        where += ["--command-config", str(cluster.admin_client_properties)]  # the controllers' listener is mutual TLS
        create_orders(admin)
        with acked_load(cluster.bootstrap_servers) as acked:
            eventually(lambda: len(acked) > 50, 20, "acknowledged writes before the failover")
            fail_over_and_return(cluster, admin)
            assert admin.describe_topics(["orders"])[0].partitions[0].leader != 1  # no rebalance on its own
            elected = minikafka(
                "leader-election", "--election-type", "preferred", "--topic", "orders", "--partition", "0", *where
            )
            assert elected.returncode == 0, elected.stderr
            assert (
                elected.stdout.strip() == "Successfully completed leader election (PREFERRED) for partitions orders-0"
            )
            eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].leader == 1, 10, "leader 1")
            acked_before = len(acked)
            eventually(lambda: len(acked) > acked_before + 50, 20, "writes acknowledged by the restored leader")
        again = minikafka("leader-election", "--election-type", "PREFERRED", "--all-topic-partitions", "--json", *where)
        assert again.returncode == 0, again.stderr
        # Asked for every partition, Kafka's controller leaves out the ones that needed no election.
        assert json.loads(again.stdout) == {"election_type": "PREFERRED", "elected": [], "not_needed": [], "failed": []}
        unknown = minikafka(
            "leader-election", "--election-type", "preferred", "--topic", "orders", "--partition", "7", *where
        )
        assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
        assert unknown.stderr.count("\n") == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in unknown.stderr
        assert [e["reason"] for e in elections(cluster)] == ["preferred_election"]
        assert_nothing_lost(cluster, acked)
