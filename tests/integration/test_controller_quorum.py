"""Three real controller processes: election, SIGKILL of the leader, metadata survives, the victim catches up."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from background_producer import BackgroundProducer
from cluster_fixtures import eventually, issue_node_tls, running_cluster

from minikafka.client.admin import AdminClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster
from minikafka.pb import common_pb2, controller_pb2, controller_pb2_grpc, raft_pb2, raft_pb2_grpc

pytestmark = pytest.mark.integration


def register_broker(admin: AdminClient, broker_id: int) -> int:
    """Act as a broker: register, then heartbeat until unfenced; returns the broker epoch."""
    request = controller_pb2.BrokerRegistrationRequest(
        broker_id=broker_id,
        incarnation_id=str(uuid.uuid4()),
        listeners=[common_pb2.Endpoint(name="PLAINTEXT", host="127.0.0.1", port=9)],
    )
    response = admin._call_active_controller(lambda stub: stub.BrokerRegistration(request, timeout=5))
    assert response.error_code == ErrorCode.NONE
    epoch = response.broker_epoch

    def unfenced() -> bool:
        heartbeat = controller_pb2.BrokerHeartbeatRequest(
            broker_id=broker_id, broker_epoch=epoch, current_metadata_offset=epoch
        )
        answer = admin._call_active_controller(lambda stub: stub.BrokerHeartbeat(heartbeat, timeout=5))
        return answer.error_code == ErrorCode.NONE and not answer.is_fenced

    eventually(unfenced, 10, f"broker {broker_id} unfenced")
    return epoch


def test_leader_failover_keeps_committed_metadata(tmp_path: Path) -> None:
    with running_cluster(
        tmp_path / "run", controllers=3, brokers=0, **{"broker.session.timeout.ms": "60000"}
    ) as cluster:
        # It registers and heartbeats as broker 1 below: with broker 1's certificate, as the controllers require.
        admin = AdminClient(cluster.bootstrap_controllers, [], timeout_s=2, tls=issue_node_tls(cluster, "broker-1"))
        before = admin.describe_quorum()
        assert before["leader_id"] in {c.node_id for c in cluster.controllers}
        leader_address = next(c.address for c in cluster.controllers if c.node_id == before["leader_id"])

        def followers_redirect() -> bool:
            """A follower answers NOT_CONTROLLER with the leader's address (it used to fail building the answer)."""
            answers = []
            for follower in (c for c in cluster.controllers if c.node_id != before["leader_id"]):
                stub = controller_pb2_grpc.ControllerStub(admin._channel(follower.address))
                answers.append(stub.DescribeQuorum(controller_pb2.DescribeQuorumRequest(), timeout=5))
                answers.append(stub.DescribeCluster(controller_pb2.DescribeClusterRequest(), timeout=5))
            return all(
                a.error_code == ErrorCode.NOT_CONTROLLER and a.current_leader.leader_address == leader_address
                for a in answers
            )

        eventually(followers_redirect, 10, "the follower controllers redirecting to the leader")
        broker_epoch = register_broker(admin, 1)
        assert broker_epoch > 0  # the offset of its RegisterBroker record
        created = admin.create_topic("orders", partitions=2, replication_factor=1)
        assert created.num_partitions == 2

        leader = admin.describe_quorum()["leader_id"]
        killed_at = time.monotonic()
        Faults(cluster).kill(leader)

        def new_leader() -> dict | None:
            quorum = admin.describe_quorum()
            return quorum if quorum["leader_id"] not in (-1, leader) else None

        after = eventually(new_leader, 30, "a new quorum leader")
        failover_ms = (time.monotonic() - killed_at) * 1000
        assert after["leader_epoch"] > before["leader_epoch"]
        brokers = {b.broker_id: b for b in admin.describe_cluster().brokers}
        assert brokers[1].broker_epoch == broker_epoch and not brokers[1].fenced
        with pytest.raises(KafkaError) as exists:
            admin.create_topic("orders", partitions=2, replication_factor=1)
        assert exists.value.code is ErrorCode.TOPIC_ALREADY_EXISTS

        Faults(cluster).start(leader)

        def caught_up() -> bool:
            quorum = admin.describe_quorum()
            voter = next(v for v in quorum["voters"] if v["id"] == leader)
            return voter["log_end_offset"] >= quorum["high_watermark"] > after["high_watermark"] - 1

        eventually(caught_up, 30, f"controller {leader} catching up after its restart")
        # The figure for the issue's note, visible with -s; never asserted (speed belongs to benchmarks).
        print(
            json.dumps(
                {
                    "controller_failover_ms": round(failover_ms),
                    "old_epoch": before["leader_epoch"],
                    "new_epoch": after["leader_epoch"],
                }
            )
        )
        events = [
            json.loads(line)
            for line in (cluster.run_dir / "logs" / f"controller-{after['leader_id']}.jsonl").read_text().splitlines()
        ]
        assert any(e["event"] == "raft_leader_elected" and e["epoch"] == after["leader_epoch"] for e in events)
        assert any(e["event"] == "topic_created" and e["topic"] == "orders" for e in events)


FORGING_S = 10
CLUSTER_ID = "forgery-test"
FORGING_INTERVAL_S = 0.5


def forged_begin_quorum_epochs(cluster_id: str, follower: int, epoch: int) -> list[raft_pb2.BeginQuorumEpochRequest]:
    """BeginQuorumEpoch for a newer epoch naming a leader outside the voters, and from an empty and a wrong cluster
    id naming a voter that is not the leader."""
    return [
        raft_pb2.BeginQuorumEpochRequest(cluster_id=cluster_id, leader_id=999, leader_epoch=epoch + 1),
        raft_pb2.BeginQuorumEpochRequest(cluster_id="", leader_id=follower, leader_epoch=epoch + 1),
        raft_pb2.BeginQuorumEpochRequest(cluster_id="another-cluster", leader_id=follower, leader_epoch=epoch + 1),
    ]


def send_forgeries(admin: AdminClient, cluster: Cluster, follower: int, epoch: int) -> set[int]:
    """One round of forgeries to every controller; the error codes they answered."""
    errors = set()
    for controller in cluster.controllers:
        stub = raft_pb2_grpc.RaftStub(admin._channel(controller.address))
        for request in forged_begin_quorum_epochs(CLUSTER_ID, follower, epoch):
            errors.add(stub.BeginQuorumEpoch(request, timeout=5).error_code)
    return errors


def test_forged_begin_quorum_epochs_leave_the_quorum_and_acks_all_alone(tmp_path: Path) -> None:
    # Raft's own checks are under test: over mutual TLS the authorizer refuses these forgeries before Raft sees them.
    plaintext = {"security.inter.broker.protocol": "PLAINTEXT"}
    with running_cluster(
        tmp_path / "run", controllers=3, brokers=3, **{"cluster.id": CLUSTER_ID}, **plaintext
    ) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic("orders", partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
        eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].leader >= 0, 20, "a leader for orders")
        before = eventually(lambda: (q := admin.describe_quorum())["leader_id"] >= 0 and q, 20, "a quorum leader")
        leader, epoch = before["leader_id"], before["leader_epoch"]
        follower = next(c.node_id for c in cluster.controllers if c.node_id != leader)
        errors: set[int] = set()
        with BackgroundProducer(cluster.bootstrap_servers, "orders") as producer:
            eventually(lambda: producer.acknowledged > 0, 20, "the first acks=all acknowledgements")
            acknowledged_before = producer.acknowledged
            stop_at = time.monotonic() + FORGING_S
            while time.monotonic() < stop_at:
                errors |= send_forgeries(admin, cluster, follower, epoch)
                quorum = admin.describe_quorum()
                assert (quorum["leader_id"], quorum["leader_epoch"]) == (leader, epoch), quorum
                time.sleep(FORGING_INTERVAL_S)  # the forgers' pace, not a wait for the system
            acknowledged_during = producer.acknowledged - acknowledged_before
        assert producer.crashed is None, repr(producer.crashed)
        assert errors == {ErrorCode.INCONSISTENT_VOTER_SET, ErrorCode.INCONSISTENT_CLUSTER_ID}
        assert producer.failed == [] and acknowledged_during > 0
        after = admin.describe_quorum()
        assert (after["leader_id"], after["leader_epoch"]) == (leader, epoch)
        for controller in cluster.controllers:
            log = (cluster.run_dir / "logs" / f"controller-{controller.node_id}.jsonl").read_text()
            assert '"event":"raft_request_invalid"' in log
            assert '"leader":999' not in log  # nobody followed the forged leader
        print(json.dumps({"acknowledged_while_forging": acknowledged_during}))
