"""Topic deletion (`minikafka topics delete`): the controller writes RemoveTopic, running brokers delete the logs,
a broker that was down deletes them as strays when it returns, and a topic re-created under the same name gets a
new id and none of the old data."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from cluster_fixtures import admin_config, eventually, minikafka, running_cluster
from test_broker_reboot import produce
from test_broker_replication import consume_all

from minikafka.client.admin import AdminClient
from minikafka.deploy.faults import Faults

pytestmark = pytest.mark.integration

SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
}


def events(path: Path, name: str) -> list[dict]:  # type: ignore[type-arg]
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["event"] == name]


def test_topic_deleted_while_a_broker_is_down_is_a_stray_there_and_a_new_topic_starts_empty(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", **SETTINGS) as cluster:
        controllers = ",".join(cluster.bootstrap_controllers)
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        old_id = admin.create_topic("orders", assignment=[[1, 2, 3]]).topic_id
        eventually(lambda: len(admin.describe_topics(["orders"])[0].partitions[0].isr) == 3, 20, "full ISR")
        asyncio.run(produce(cluster.bootstrap_servers, "orders", 200, "old"))
        eventually(lambda: (cluster.node(3).data_dir / "orders-0").exists(), 10, "orders-0 on broker 3")
        Faults(cluster).stop(3)

        deleted = minikafka("topics", "delete", "orders", "--bootstrap-controller", controllers, *admin_config(cluster))
        assert deleted.returncode == 0, deleted.stderr
        assert deleted.stdout.startswith("Deleted topic orders")
        for broker in (1, 2):
            eventually(
                lambda b=broker: events(cluster.node(b).events_path, "log_deleted"),
                20,
                f"broker {broker} deleting orders-0",
            )
            assert not (cluster.node(broker).data_dir / "orders-0").exists()
        assert (cluster.node(3).data_dir / "orders-0").exists()  # down: it never heard

        new_id = admin.create_topic("orders", assignment=[[1, 2, 3]]).topic_id
        assert new_id != old_id
        Faults(cluster).start(3)
        eventually(
            lambda: [
                e
                for e in events(cluster.node(3).events_path, "stray_partition_deleted")
                if e["partition"] == "orders-0"
            ],
            30,
            "broker 3 deleting the old orders-0 as a stray",
        )
        [stray] = [
            e for e in events(cluster.node(3).events_path, "stray_partition_deleted") if e["partition"] == "orders-0"
        ]
        assert stray["topic_id"] == _text(old_id)
        eventually(
            lambda: len(admin.describe_topics(["orders"])[0].partitions[0].isr) == 3, 30, "broker 3 back in the ISR"
        )

        [topic] = admin.describe_topics(["orders"])
        assert topic.topic_id == _text(new_id)
        assert asyncio.run(consume_all(cluster.bootstrap_servers, 1)) == {}  # none of the old records
        acked = asyncio.run(produce(cluster.bootstrap_servers, "orders", 5, "new"))
        assert [offset for offset, _ in acked] == list(range(5))
        assert asyncio.run(consume_all(cluster.bootstrap_servers, 5)) == dict(acked)
        controller_events = [e for c in cluster.controllers for e in events(c.events_path, "topic_deleted")]
        assert controller_events and all(
            e["topic"] == "orders" and e["topic_id"] == _text(old_id) for e in controller_events
        )

        unknown = minikafka("topics", "delete", "nope", "--bootstrap-controller", controllers, *admin_config(cluster))
        assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
        assert unknown.stderr.count("\n") == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in unknown.stderr


def _text(raw: bytes) -> str:
    from minikafka.client.admin import topic_id_text

    return topic_id_text(raw)
