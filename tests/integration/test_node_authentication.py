"""Issue 38's forged requests, sent to a real cluster over its default mutual TLS, are refused and harm nothing.

Each forgery goes out twice: without a certificate (the TLS handshake refuses it) and with another node's certificate
(CLUSTER_AUTHORIZATION_FAILED, code 31): a BrokerHeartbeat fencing a broker, an AlterPartition shrinking the ISR
"as the leader", a follower Fetch at the leader's log end (also on the client listener), the registration of
phantom brokers 4 and 2^31-1, and a fault-service call. Afterwards the ISR and partition epoch are unchanged, no
broker is fenced or added, AlterPartition is not held, every acks=all write is read back, and the refusals are
logged.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from cluster_fixtures import eventually, node_tls, running_cluster
from test_broker_replication import consume_all
from test_forged_requests import TOPIC, forged_fetch, produce_for

from minikafka.client.admin import AdminClient
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import sync_channel
from minikafka.common.tls import TlsFiles
from minikafka.deploy.local_cluster import Cluster
from minikafka.pb import broker_pb2_grpc, controller_pb2, controller_pb2_grpc, fault_pb2, fault_pb2_grpc

pytestmark = pytest.mark.integration

Call = Callable[[grpc.Channel], Any]


def forgeries(cluster: Cluster, admin: AdminClient) -> dict[str, tuple[str, Call]]:
    """Each forged request: the address it goes to and the call (leader 1, followers 2 and 3)."""
    topic = admin.describe_topics([TOPIC])[0]
    partition = topic.partitions[0]
    epochs = {b.broker_id: b.broker_epoch for b in admin.describe_cluster().brokers}
    controller = cluster.controllers[0].address
    leader = cluster.node(partition.leader).inter_node_address
    topic_id = uuid.UUID(topic.topic_id).bytes

    def alter_partition(channel: grpc.Channel) -> Any:
        request = controller_pb2.AlterPartitionRequest(
            broker_id=partition.leader, broker_epoch=epochs[partition.leader]
        )
        shrink = request.topics.add(topic_id=topic_id).partitions.add(
            partition_index=0, leader_epoch=partition.leader_epoch, partition_epoch=partition.partition_epoch
        )
        shrink.new_isr_with_epochs.add(broker_id=partition.leader, broker_epoch=epochs[partition.leader])
        return controller_pb2_grpc.ControllerStub(channel).AlterPartition(request, timeout=5)

    def register(broker_id: int) -> Call:
        request = controller_pb2.BrokerRegistrationRequest(broker_id=broker_id, incarnation_id=uuid.uuid4().hex)
        return lambda channel: controller_pb2_grpc.ControllerStub(channel).BrokerRegistration(request, timeout=5)

    heartbeat = controller_pb2.BrokerHeartbeatRequest(broker_id=2, broker_epoch=epochs[2], want_fence=True)
    fetch = forged_fetch(topic_id, 2, partition.leader_epoch, 10**9)  # far past the log end: a caught-up claim
    fetch.replica_state.replica_epoch = epochs[2]
    return {
        "heartbeat": (
            controller,
            lambda c: controller_pb2_grpc.ControllerStub(c).BrokerHeartbeat(heartbeat, timeout=5),
        ),
        "alter_partition": (controller, alter_partition),
        "follower_fetch": (leader, lambda c: broker_pb2_grpc.BrokerStub(c).Fetch(fetch, timeout=5)),
        "register_4": (controller, register(4)),
        "register_max": (controller, register(2**31 - 1)),
        "fault": (
            leader,
            lambda c: fault_pb2_grpc.FaultStub(c).HoldAlterPartition(fault_pb2.HoldAlterPartitionRequest(), timeout=5),
        ),
    }


def refused_at_handshake(address: str, call: Call, tls: TlsFiles | None) -> bool:
    with sync_channel(address, tls) as channel:
        try:
            call(channel)
        except grpc.RpcError as error:
            return error.code() == grpc.StatusCode.UNAVAILABLE
    return False


def error_of(address: str, call: Call, tls: TlsFiles | None) -> int:
    with sync_channel(address, tls) as channel:
        answer = call(channel)
    return answer.error_code


def test_forged_requests_without_or_with_another_nodes_certificate_are_refused(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", **{"replica.lag.time.max.ms": "1500"}) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic(TOPIC, assignment=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
        describe = lambda: admin.describe_topics([TOPIC])[0].partitions[0]  # noqa: E731
        eventually(lambda: describe().isr == [1, 2, 3], 30, "ISR [1, 2, 3]")
        acked = asyncio.run(produce_for(cluster.bootstrap_servers, 0.3, "before"))
        before = describe()
        ca_only = TlsFiles(cluster.admin_tls.ca)
        someone_else = node_tls(cluster, 3)  # a real node's certificate, claiming to be another node

        for name, (address, call) in forgeries(cluster, admin).items():
            assert refused_at_handshake(address, call, None), name
            assert refused_at_handshake(address, call, ca_only), name
            assert error_of(address, call, someone_else) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED, name
        address, fetch = forgeries(cluster, admin)["follower_fetch"]
        client_listener = cluster.node(before.leader).address  # plaintext, for clients: no replica may fetch there
        assert error_of(client_listener, fetch, None) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED

        acked += asyncio.run(produce_for(cluster.bootstrap_servers, 0.3, "after"))
        after = describe()
        assert (after.isr, after.partition_epoch, after.leader_epoch) == (
            [1, 2, 3],
            before.partition_epoch,
            before.leader_epoch,
        )
        brokers = admin.describe_cluster().brokers
        assert sorted((b.broker_id, b.fenced) for b in brokers) == [(1, False), (2, False), (3, False)]
        with sync_channel(cluster.node(1).inter_node_address, cluster.admin_tls) as channel:
            state = fault_pb2_grpc.FaultStub(channel).DescribeState(fault_pb2.DescribeStateRequest(), timeout=5)
        assert not state.alter_partition_held
        read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked), TOPIC))
        assert [offset for offset, value in acked if read.get(offset) != value] == []

        logged = [
            json.loads(line)
            for node in cluster.nodes
            for line in node.events_path.read_text().splitlines()
            if '"authorization_failed"' in line
        ]
        methods = {event["method"].rsplit("/", 1)[1] for event in logged}
        assert {"BrokerHeartbeat", "AlterPartition", "Fetch", "BrokerRegistration", "HoldAlterPartition"} <= methods
        assert {event["principal"] for event in logged} == {"User:broker-3", "User:ANONYMOUS"}
