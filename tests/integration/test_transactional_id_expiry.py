"""Transactional id expiry with real processes (1 controller, 1 broker): an id whose transaction confluent-kafka
committed disappears from `minikafka transactions --list` once transactional.id.expiration.ms (2 s) passed, is
unknown to `--describe`, stays gone when the broker restarts and reloads __transaction_state (its tombstone), and a
new producer of the id starts afresh with a new producer id."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster

from minikafka.deploy import cluster_commands
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")

OVERRIDES = {
    "transaction.state.log.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transactional.id.expiration.ms": "2000",
    "transaction.remove.expired.transaction.cleanup.interval.ms": "500",
}
TOPIC, TXN_ID = "payments", "expiring-writer"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("txn-id-expiry"), 1, 1, **OVERRIDES) as started:
        with cluster_commands.admin_for(started, timeout_s=10) as admin:
            admin.create_topic(TOPIC, partitions=1, replication_factor=1)
        yield started


def listed(cluster: Cluster) -> list[dict] | None:
    """The transactional ids `transactions --list` shows; None while the coordinator cannot answer yet."""
    tool = minikafka("transactions", "--list", "--json", "--dir", str(cluster.run_dir))
    return json.loads(tool.stdout) if tool.returncode == 0 else None


def described(cluster: Cluster) -> dict | str:
    """The id as `transactions --describe` shows it, or its error output."""
    tool = minikafka("transactions", "--describe", TXN_ID, "--json", "--dir", str(cluster.run_dir))
    return json.loads(tool.stdout) if tool.returncode == 0 else tool.stderr


def committed_transaction(cluster: Cluster) -> None:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "transactional.id": TXN_ID}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(TOPIC, value=b"paid")
    producer.commit_transaction(60)


def events(cluster: Cluster, name: str) -> list[dict]:
    """The broker's events `name` so far, in order (its log file outlives restarts)."""
    lines = cluster.brokers[0].events_path.read_text().splitlines()
    found = [json.loads(line) for line in lines if f'"{name}"' in line]
    return [e for e in found if e.get("event") == name]


def completions(cluster: Cluster) -> list[dict]:
    """The id's completed transactions: their events carry the producer id and epoch (the id may expire before a
    DescribeTransactions could be sent)."""
    return [e for e in events(cluster, "transaction_completed") if e["transactional_id"] == TXN_ID]


def test_an_unused_transactional_id_expires_and_stays_gone_after_a_restart(cluster: Cluster) -> None:
    committed_transaction(cluster)
    [first] = eventually(lambda: completions(cluster), 30, "the transaction completed")
    assert first["result"] == "commit", first

    def gone() -> bool:
        ids = listed(cluster)
        return ids is not None and all(t["transactional_id"] != TXN_ID for t in ids)

    eventually(gone, 60, f"{TXN_ID} expired", interval_s=0.5)
    missing = described(cluster)
    assert isinstance(missing, str) and "TRANSACTIONAL_ID_NOT_FOUND" in missing, missing
    assert any(TXN_ID in e["transactional_ids"] for e in events(cluster, "transactional_ids_expired"))

    # The broker reloads __transaction_state: the tombstone keeps the id out from the load on.
    loads = len(events(cluster, "transaction_coordinator_loaded"))
    broker = cluster.brokers[0].node_id
    Faults(cluster).stop(broker)
    Faults(cluster).start(broker)
    reloaded = eventually(lambda: events(cluster, "transaction_coordinator_loaded")[loads:], 60, "a reload")
    assert reloaded[0]["transactional_ids"] == 0, reloaded

    # A new producer of the id starts afresh: a new producer id, at epoch 0.
    committed_transaction(cluster)
    again = eventually(lambda: completions(cluster)[1:], 30, "the second transaction completed")[0]
    assert again["producer_id"] != first["producer_id"] and again["producer_epoch"] == 0, (first, again)
