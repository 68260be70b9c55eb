"""Brokers against outside interference and their own settings, with real processes: a want_shutdown heartbeat the
broker did not send (forged with its certificate, the one identity the controller accepts it from) does not turn a
live broker into a zombie (it is fenced, catches up, and is unfenced again, still running); a topic created without
min.insync.replicas follows the brokers' own value."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from cluster_fixtures import eventually, minikafka, node_tls, running_cluster

from minikafka.client.admin import AdminClient
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import sync_channel
from minikafka.common.tls import TlsFiles
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import is_alive
from minikafka.pb import controller_pb2, controller_pb2_grpc

pytestmark = pytest.mark.integration

SETTINGS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "200"}


def forge_shutdown_heartbeat(
    controller: str, broker_id: int, broker_epoch: int, tls: TlsFiles
) -> controller_pb2.BrokerHeartbeatResponse:
    """Sent with the broker's own certificate: a request only that broker can make under mutual TLS."""
    with sync_channel(controller, tls) as channel:
        stub = controller_pb2_grpc.ControllerStub(channel)
        request = controller_pb2.BrokerHeartbeatRequest(
            broker_id=broker_id, broker_epoch=broker_epoch, current_metadata_offset=2**40, want_shutdown=True
        )
        return stub.BrokerHeartbeat(request, timeout=5)


def fenced_for_shutdown(events_path: Path, broker_id: int) -> bool:
    for line in events_path.read_text().splitlines():
        event = json.loads(line)
        if (
            event.get("event") == "broker_fenced"
            and event.get("broker_id") == broker_id
            and event.get("reason") == "controlled_shutdown_complete"
        ):
            return True
    return False


def test_a_forged_want_shutdown_heartbeat_does_not_stop_a_live_broker(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", controllers=1, brokers=1, **SETTINGS) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        [broker] = eventually(
            lambda: [b for b in admin.describe_cluster().brokers if not b.fenced], 30, "the broker unfenced"
        )
        response = forge_shutdown_heartbeat(
            cluster.bootstrap_controllers[0], broker.broker_id, broker.broker_epoch, node_tls(cluster, broker.broker_id)
        )
        assert response.error_code == 0
        controller_log = cluster.controllers[0].events_path
        # The controller took it for the broker's own request: the broker's next heartbeat was told should_shutdown.
        eventually(lambda: fenced_for_shutdown(controller_log, broker.broker_id), 20, "fenced for the shutdown")
        eventually(
            lambda: not {b.broker_id: b for b in admin.describe_cluster().brokers}[broker.broker_id].fenced,
            20,
            "the broker, still heartbeating, unfenced again",
        )
        assert is_alive(cluster.pids[broker.broker_id])
        again = {b.broker_id: b for b in admin.describe_cluster().brokers}[broker.broker_id]
        assert again.broker_epoch == broker.broker_epoch  # the same process and registration: not a restart


async def produce_one(bootstrap: list[str], topic: str, delivery_timeout_ms: int) -> ErrorCode:
    # delivery.timeout.ms must cover linger.ms + request.timeout.ms (Kafka's rule, checked by ProducerConfig)
    request_timeout_ms = min(5000, delivery_timeout_ms // 2)
    config = ProducerConfig(acks=-1, delivery_timeout_ms=delivery_timeout_ms, request_timeout_ms=request_timeout_ms)
    producer = Producer(bootstrap, config)
    try:
        await (await producer.send(topic, b"v", partition=0))
        return ErrorCode.NONE
    except DeliveryFailed as failed:
        return failed.code
    finally:
        await producer.close()


def test_a_topic_created_without_min_insync_replicas_follows_the_cluster_wide_value(tmp_path: Path) -> None:
    # With the ELR on, min.insync.replicas is one cluster-wide value that controller and brokers share (Kafka 4.1):
    # a broker's own properties cannot lower or raise it for a topic created without one.
    with running_cluster(tmp_path / "run", controllers=1, brokers=2, **SETTINGS) as cluster:
        faults = Faults(cluster)
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        set_default = minikafka(
            "configs", "--alter", "--entity-type", "brokers", "--entity-default",
            "--add-config", "min.insync.replicas=2", "--dir", str(cluster.run_dir),
        )  # fmt: skip
        assert set_default.returncode == 0, set_default.stderr
        admin.create_topic("orders", partitions=1, replication_factor=2)
        eventually(lambda: len(admin.describe_topics(["orders"])[0].partitions[0].isr) == 2, 20, "full ISR")
        assert asyncio.run(produce_one(cluster.bootstrap_servers, "orders", 20000)) is ErrorCode.NONE

        partition = admin.describe_topics(["orders"])[0].partitions[0]
        follower = next(r for r in partition.replicas if r != partition.leader)
        faults.stop(follower)  # a controlled shutdown takes it out of the ISR
        eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].isr == [partition.leader], 20, "ISR 1")
        refused = asyncio.run(produce_one(cluster.bootstrap_servers, "orders", 2000))
        assert refused is ErrorCode.NOT_ENOUGH_REPLICAS
