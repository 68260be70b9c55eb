"""Real brokers replicate as Kafka does: acks=all survives SIGKILL of the leader; the victim rejoins the ISR."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from cluster_fixtures import eventually, running_cluster

from minikafka.client.admin import AdminClient
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig
from minikafka.deploy.faults import Faults
from minikafka.deploy.scenario.clients import consume_partition

pytestmark = pytest.mark.integration

FAST = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
}


async def produce_with_kill(bootstrap: list[str], count: int, kill_at: int, kill: callable) -> list[dict]:
    producer = Producer(bootstrap, ProducerConfig(acks=-1, delivery_timeout_ms=60000, request_timeout_ms=5000))
    futures = []
    for index in range(count):
        value = f"v-{index:06d}".encode()
        futures.append((value, await producer.send("orders", value, partition=0)))
        if index == kill_at:
            await asyncio.to_thread(kill)
        if index % 500 == 0:
            await asyncio.sleep(0)  # let the sender run between bursts
    outcomes = []
    for value, future in futures:
        try:
            metadata = await future
            outcomes.append({"value": value.decode(), "offset": metadata.offset, "error": None})
        except DeliveryFailed as error:
            outcomes.append({"value": value.decode(), "offset": None, "error": error.code.name})
    await producer.close()
    return outcomes


async def consume_all(
    bootstrap: list[str], expected: int, topic: str = "orders", ends: list[dict] | None = None
) -> dict[int, str]:
    """offset -> value of partition 0 (the scenario's final read; `orders` unless told); with `ends`, also where
    the read stopped."""
    return await consume_partition(bootstrap, topic, expected, ends)


def test_acks_all_survives_leader_kill_and_the_victim_rejoins(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", **FAST) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic("orders", partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
        eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].leader >= 0, 20, "a leader")
        before = admin.describe_topics(["orders"])[0].partitions[0]
        victim = before.leader

        outcomes = asyncio.run(
            produce_with_kill(cluster.bootstrap_servers, 10_000, 3_000, lambda: Faults(cluster).kill(victim))
        )
        acked = [o for o in outcomes if o["error"] is None]
        assert len(acked) >= 9_000, f"only {len(acked)} acknowledged"
        after = admin.describe_topics(["orders"])[0].partitions[0]
        assert after.leader != victim and after.leader in before.isr
        assert after.leader_epoch > before.leader_epoch

        read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked)))
        lost = [o for o in acked if read.get(o["offset"]) != o["value"]]
        assert not lost, f"{len(lost)} acknowledged records lost, e.g. {lost[:3]}"

        Faults(cluster).start(victim)
        eventually(
            lambda: victim in admin.describe_topics(["orders"])[0].partitions[0].isr,
            30,
            f"broker {victim} back in the ISR",
        )
        failed = len(outcomes) - len(acked)
        print(json.dumps({"acknowledged": len(acked), "failed": failed, "lost": len(lost)}))
