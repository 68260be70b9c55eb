"""librdkafka's idempotent producer (acks=all) through the Kafka listener while the partition's leader is
SIGKILLed with batches that the next leader already holds but no producer was told of: every acknowledged record
is read back exactly once, and the retried batches are answered from the new leader's producer state.

To hold batches between "replicated" and "acknowledged", the last follower in replica order is paused (its ISR
membership holds the HWM back); the leader is killed once the first follower's log matches the leader's, then the
paused one resumes. The first follower is the one the controller elects."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from cluster_fixtures import eventually, running_cluster

from minikafka.client.admin import AdminClient
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")

TOPIC = "exactly-once"
BEFORE, HELD, AFTER = 1000, 300, 700
SETTINGS = {
    "broker.session.timeout.ms": "5000",  # the paused follower must stay in the ISR until the leader is killed
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "20000",
}


def _log_size(cluster: Cluster, broker_id: int) -> int:
    return sum(p.stat().st_size for p in (cluster.node(broker_id).data_dir / f"{TOPIC}-0").glob("*.log"))


def _read_all(bootstrap: str, expected: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "exactly-once-check", "enable.auto.commit": False}
    )
    partition = confluent_kafka.TopicPartition(TOPIC, 0)
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, confluent_kafka.OFFSET_BEGINNING)])
    values: list[bytes] = []
    try:

        def read_some() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
            if len(values) < expected:
                return False
            _low, high = consumer.get_watermark_offsets(partition, timeout=5)
            return consumer.position([partition])[0].offset >= high

        eventually(read_some, 60, f"the log read to its high watermark ({expected}+ records)", interval_s=0)
    finally:
        consumer.close()
    return values


def test_a_leader_sigkill_under_idempotent_acks_all_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", **SETTINGS) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
        eventually(lambda: len(admin.describe_topics([TOPIC])[0].partitions[0].isr) == 3, 20, "full ISR")
        partition = admin.describe_topics([TOPIC])[0].partitions[0]
        leader = partition.leader
        successor, paused = [r for r in partition.replicas if r != leader]
        faults = Faults(cluster)

        producer = confluent_kafka.Producer(
            {
                "bootstrap.servers": cluster.kafka_bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "batch.num.messages": 50,
                "message.timeout.ms": 60000,
            }
        )
        acked: list[bytes] = []
        errors: list[str] = []
        lock = threading.Lock()

        def delivered(error: object, message: object) -> None:
            with lock:
                if error is not None:
                    errors.append(str(error))
                else:
                    acked.append(message.value())  # type: ignore[attr-defined]

        def produce(start: int, count: int) -> None:
            for i in range(start, start + count):
                producer.produce(TOPIC, value=b"v-%06d" % i, partition=0, on_delivery=delivered)
                producer.poll(0)

        produce(0, BEFORE)
        assert producer.flush(30) == 0 and len(acked) == BEFORE
        faults.pause(paused)
        try:
            size_before = _log_size(cluster, leader)
            produce(BEFORE, HELD)
            eventually(
                lambda: _log_size(cluster, successor) == _log_size(cluster, leader) > size_before,
                10,
                "the held batches on the successor",
            )
            assert len(acked) == BEFORE, "nothing is acknowledged while the paused follower holds the HWM"
            faults.kill(leader)
        finally:
            faults.resume(paused)
        produce(BEFORE + HELD, AFTER)
        assert producer.flush(90) == 0
        assert errors == []
        assert len(acked) == BEFORE + HELD + AFTER
        assert admin.describe_topics([TOPIC])[0].partitions[0].leader == successor

        values = _read_all(cluster.kafka_bootstrap_servers, len(acked))
        assert len(values) == len(set(values)), "a value is in the log twice"
        assert sorted(values) == sorted(acked)
        successor_log = cluster.node(successor).events_path.read_text()
        assert '"event":"produce_duplicate_batch"' in successor_log, "no retried batch reached the new leader"
