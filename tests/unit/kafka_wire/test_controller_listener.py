"""A controller's Kafka listener (KIP-919) on loopback, asked with raw Kafka requests: it advertises and answers
ApiVersions, DescribeCluster (CONTROLLER endpoint type), DescribeQuorum, AddRaftVoter, RemoveRaftVoter and
UpdateFeatures (kraft.version), and nothing else (a Metadata request closes the connection, as Kafka closes one
asking an API not enabled on the listener)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from immutables import Map
from kio.schema.add_raft_voter.v1 import request as add_v1
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.describe_cluster.v0 import request as cluster_v0
from kio.schema.describe_cluster.v1.request import DescribeClusterRequest
from kio.schema.describe_quorum.v2 import request as quorum_v2
from kio.schema.metadata.v12.request import MetadataRequest
from kio.schema.types import TopicName
from kio.schema.update_features.v1 import request as features_v1
from kio.static.primitive import i8, i16, i32, i32Timedelta, u16

from minikafka.broker.client_authorizer import ClientAuthorizer
from minikafka.broker.kafka_wire import controller_apis
from minikafka.broker.kafka_wire.context import QuorumAccess
from minikafka.broker.kafka_wire.controller_apis import ControllerWireContext
from minikafka.broker.kafka_wire.listener import KafkaListener, ListenerLimits
from minikafka.client.kafka_quorum_client import KafkaQuorumClient
from minikafka.client.kafka_wire_client import KafkaConnection
from minikafka.common.config import ConfigError, load_config
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.standard_authorizer import AuthorizerSettings
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.control.feature_control import FeatureUpdate, UpgradeType, update_features
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Endpoint, RegisterController
from minikafka.pb import controller_pb2

# ApiVersions, DescribeQuorum, UpdateFeatures, DescribeCluster, AddRaftVoter, RemoveRaftVoter
CONTROLLER_APIS = {18, 55, 57, 60, 80, 81}


class ActiveController:
    """The active controller's answers, as the listener's forwarding client would bring them."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []

    async def call_within(self, method: str, request: Any, _timeout_s: float) -> Any:
        self.asked.append((method, request))
        if method == "DescribeQuorum":
            answer = controller_pb2.DescribeQuorumResponse(leader_id=102, leader_epoch=7, high_watermark=42)
            answer.current_voters.add(replica_id=102, replica_directory_id="AAAAAAAAAAEAAAAAAAAAAg", log_end_offset=42)
            answer.nodes.add(node_id=102, host="127.0.1.2", port=9093)
            return answer
        if method == "UpdateFeatures":
            updates = [
                FeatureUpdate(u.feature, u.max_version_level, UpgradeType.of(u.upgrade_type)) for u in request.updates
            ]
            decided = update_features(MetadataImage(), updates, request.validate_only).response
            return controller_pb2.UpdateFeaturesResponse(
                error_code=decided.error_code, error_message=decided.error_message or ""
            )
        return controller_pb2.RaftVoterChangeResponse(error_code=ErrorCode.NONE)


Served = tuple[KafkaListener, ActiveController]


@pytest.fixture
async def listener() -> AsyncIterator[Served]:
    active = ActiveController()
    quorum = QuorumAccess(active, "minikafka", 1000, {101: ("127.0.0.1", 9093)})
    authorizer = ClientAuthorizer(AuthorizerSettings(), Map)
    at_one = lambda: (1, 42)  # noqa: E731 - the quorum's kraft.version and the offset it is at
    ctx = ControllerWireContext("PLAINTEXT", 101, ("127.0.0.1", 0), quorum, authorizer, (), kraft_version=at_one)
    kafka_listener = KafkaListener(ctx, controller_apis.dispatch, "127.0.0.1", 0, ListenerLimits(1 << 20, 60_000))
    await kafka_listener.start()
    kafka_listener.ctx = dataclasses.replace(ctx, advertised=("127.0.0.1", kafka_listener.port))
    yield kafka_listener, active
    await kafka_listener.stop()


async def test_api_versions_advertise_the_controller_apis_only(listener: Served) -> None:
    connection = KafkaConnection(listener[0].address, 10)
    response = await connection.send(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    assert int(response.error_code.value) == ErrorCode.NONE
    assert {int(key.api_key) for key in response.api_keys} == CONTROLLER_APIS
    await connection.close()


async def test_describe_cluster_answers_the_controllers(listener: Served) -> None:
    kafka_listener, _ = listener
    connection = KafkaConnection(kafka_listener.address, 10)
    asked = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=i8(2))
    response = await connection.send(asked)
    assert int(response.error_code.value) == ErrorCode.NONE and int(response.endpoint_type) == 2
    assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [(101, "127.0.0.1", kafka_listener.port)]
    # Nothing registered yet: the controller lists itself; no leader known, so no controller id (Kafka's -1).
    assert int(response.controller_id) == -1 and response.cluster_id == "minikafka"
    brokers = await connection.send(DescribeClusterRequest(include_cluster_authorized_operations=False))
    assert int(brokers.error_code.value) == ErrorCode.MISMATCHED_ENDPOINT_TYPE and brokers.brokers == ()
    assert brokers.error_message == (
        "The request was sent to an endpoint of type CONTROLLER, but we wanted an endpoint of type BROKER"
    )
    assert (int(brokers.controller_id), brokers.cluster_id) == (-1, "")
    unknown = await connection.send(
        DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=i8(7))
    )
    assert int(unknown.error_code.value) == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    # v0 cannot name an endpoint type (it means BROKER): Kafka's controller answers INVALID_REQUEST.
    v0 = await connection.send(cluster_v0.DescribeClusterRequest(include_cluster_authorized_operations=False))
    assert int(v0.error_code.value) == ErrorCode.INVALID_REQUEST and v0.brokers == ()
    await connection.close()


@contextlib.asynccontextmanager
async def connected(authorizer_enabled: bool = False, **fields: Any) -> AsyncIterator[KafkaConnection]:
    """A connection to a listener of controller 101 with these context fields."""
    quorum = QuorumAccess(ActiveController(), "minikafka", 1000, {101: ("127.0.0.1", 9093)})
    authorizer = ClientAuthorizer(AuthorizerSettings(enabled=authorizer_enabled), Map)
    ctx = ControllerWireContext("PLAINTEXT", 101, ("127.0.1.1", 9094), quorum, authorizer, (), **fields)
    kafka_listener = KafkaListener(ctx, controller_apis.dispatch, "127.0.0.1", 0, ListenerLimits(1 << 20, 60_000))
    await kafka_listener.start()
    connection = KafkaConnection(kafka_listener.address, 10)
    try:
        yield connection
    finally:
        await connection.close()
        await kafka_listener.stop()


ASK_CONTROLLERS = DescribeClusterRequest(include_cluster_authorized_operations=False, endpoint_type=i8(2))


async def test_describe_cluster_lists_the_registered_controllers_on_the_asked_listener() -> None:
    """KIP-919: every controller registered with an endpoint of this listener's name, and the quorum's leader as
    the controller id when it is among them."""
    registrations = {
        101: RegisterController(101, "a", (Endpoint("PLAINTEXT", "127.0.1.1", 9094),)),
        102: RegisterController(
            102, "b", (Endpoint("SSL", "127.0.1.2", 9095), Endpoint("PLAINTEXT", "127.0.1.2", 9094))
        ),
        103: RegisterController(103, "c", (Endpoint("SSL", "127.0.1.3", 9095),)),
    }
    leader = [102]
    async with connected(registrations=lambda: registrations, leader_id=lambda: leader[0]) as connection:
        response = await connection.send(ASK_CONTROLLERS)
        assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [
            (101, "127.0.1.1", 9094),
            (102, "127.0.1.2", 9094),
        ]
        assert int(response.controller_id) == 102
        leader[0] = 103  # the leader has no endpoint on this listener: no controller id, as Kafka answers
        assert int((await connection.send(ASK_CONTROLLERS)).controller_id) == -1


async def test_describe_cluster_on_a_controller_needs_alter_on_the_cluster() -> None:
    """As Kafka's ControllerApis, unlike a broker, which answers anyone: a caller without ALTER is refused."""
    async with connected(authorizer_enabled=True) as connection:
        response = await connection.send(ASK_CONTROLLERS)
        assert int(response.error_code.value) == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and response.brokers == ()


async def test_describe_quorum_and_add_raft_voter_go_to_the_active_controller(
    listener: Served,
) -> None:
    kafka_listener, active = listener
    connection = KafkaConnection(kafka_listener.address, 10)
    partition = quorum_v2.PartitionData(partition_index=i32(0))
    topic = quorum_v2.TopicData(topic_name=TopicName("__cluster_metadata"), partitions=(partition,))
    quorum = await connection.send(quorum_v2.DescribeQuorumRequest(topics=(topic,)))
    [data] = quorum.topics[0].partitions
    assert (int(data.leader_id), int(data.leader_epoch), int(data.high_watermark)) == (102, 7, 42)
    assert [(int(n.node_id), n.listeners[0].port) for n in quorum.nodes] == [(102, 9093)]
    add = add_v1.AddRaftVoterRequest(
        cluster_id="minikafka",
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
        voter_id=i32(104),
        voter_directory_id=uuid.UUID(int=5),
        listeners=(add_v1.Listener(name="CONTROLLER", host="127.0.1.4", port=u16(9093)),),
        ack_when_committed=False,
    )
    added = await connection.send(add)
    assert int(added.error_code.value) == ErrorCode.NONE
    assert [method for method, _ in active.asked] == ["DescribeQuorum", "AddRaftVoter"]
    assert active.asked[1][1].ack_when_appended and active.asked[1][1].voter_endpoint == "127.0.1.4:9093"
    await connection.close()


async def test_metadata_is_not_served_by_a_controller(listener: Served) -> None:
    connection = KafkaConnection(listener[0].address, 10)
    asked = MetadataRequest(
        topics=None,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    with pytest.raises(KafkaError) as refused:
        await connection.send(asked)  # closed unanswered: the API is not enabled on this listener
    assert refused.value.code == ErrorCode.NETWORK_EXCEPTION
    await connection.close()


def controller_config(**keys: str) -> ControllerConfig:
    base = {
        "node.id": "101",
        "process.roles": "controller",
        "controller.quorum.voters": "101@127.0.0.1:9093",
        "log.dirs": "/nonexistent",
    }
    return load_config(ControllerConfig, base | keys, "test")


def test_controller_listener_names_pick_the_quorums_listener_first() -> None:
    both = "PLAINTEXT://127.0.0.1:9193,CONTROLLER://127.0.0.1:9093"
    named = controller_config(listeners=both, **{"controller.listener.names": "controller,PLAINTEXT"})
    assert named.listener.address == "127.0.0.1:9093"
    assert [li.address for li in named.kafka_listeners] == ["127.0.0.1:9193"]
    # Without the key: every listener, in order; a lone listener is the quorum's, as before.
    assert controller_config(listeners=both).listener.name == "PLAINTEXT"
    assert controller_config(listeners="CONTROLLER://127.0.0.1:9093").kafka_listeners == ()
    with pytest.raises(ConfigError, match="controller.listener.names"):
        controller_config(listeners=both, **{"controller.listener.names": "CONTROLLER"})


async def test_the_tools_kafka_client_reads_the_same_document(listener: Served) -> None:
    """`metadata-quorum --protocol kafka`'s client: the gRPC admin client's document, and Kafka's errors raised."""
    kafka_listener, active = listener
    client = KafkaQuorumClient([kafka_listener.address], 5)
    document = await asyncio.to_thread(client.describe_quorum)
    assert (document["leader_id"], document["high_watermark"]) == (102, 42)
    assert document["voters"][0]["directory_id"] == "AAAAAAAAAAEAAAAAAAAAAg"
    assert document["endpoints"] == {102: "127.0.1.2:9093"}
    await asyncio.to_thread(client.add_raft_voter, 104, "AAAAAAAAAAEAAAAAAAAAAw", "minikafka", "127.0.1.4:9093")
    assert active.asked[-1][1].voter_directory_id == "AAAAAAAAAAEAAAAAAAAAAw"
    assert not active.asked[-1][1].ack_when_appended  # the tool waits for the commit, as Kafka's does
    with pytest.raises(KafkaError) as bad:
        await asyncio.to_thread(client.remove_raft_voter, 101, "not base64!", "minikafka")
    assert bad.value.code == ErrorCode.INVALID_REQUEST
    await asyncio.to_thread(client.upgrade_kraft_version, 1, "minikafka")
    assert active.asked[-1][0] == "UpgradeKRaftVersion"
    with pytest.raises(KafkaError) as refused:
        await asyncio.to_thread(client.upgrade_kraft_version, 2, "minikafka")
    assert refused.value.code == ErrorCode.INVALID_UPDATE_VERSION


async def test_update_features_sends_kraft_version_to_the_quorum_and_the_rest_to_update_features(
    listener: Served,
) -> None:
    """kafka-features --bootstrap-controller upgrade --feature kraft.version=1: the active controller's
    UpgradeKRaftVersion (any other level of it: INVALID_UPDATE_VERSION, nothing asked); every other feature goes to
    the controller's UpdateFeatures, whose answer every result and the top-level error repeat."""
    kafka_listener, active = listener
    connection = KafkaConnection(kafka_listener.address, 10)
    timeout = i32Timedelta.parse(datetime.timedelta(seconds=5))

    def update(feature: str, level: int, validate_only: bool = False) -> Any:
        key = features_v1.FeatureUpdateKey(feature=feature, max_version_level=i16(level), upgrade_type=i8(1))
        return features_v1.UpdateFeaturesRequest(timeout=timeout, feature_updates=(key,), validate_only=validate_only)

    answered = await connection.send(update("kraft.version", 1))
    assert [(r.feature, int(r.error_code.value)) for r in answered.results] == [("kraft.version", 0)]
    assert [method for method, _ in active.asked] == ["UpgradeKRaftVersion"]
    for refused in (update("kraft.version", 0), update("kraft.version", 2)):
        result = (await connection.send(refused)).results[0]
        assert int(result.error_code.value) == ErrorCode.INVALID_UPDATE_VERSION, result
    await connection.send(update("kraft.version", 1, validate_only=True))
    assert len(active.asked) == 1
    unknown = await connection.send(update("metadata.version", 21))
    assert int(unknown.error_code.value) == int(unknown.results[0].error_code.value) == ErrorCode.INVALID_UPDATE_VERSION
    upgraded = await connection.send(update("transaction.version", 2))
    assert int(upgraded.error_code.value) == 0 and [r.feature for r in upgraded.results] == ["transaction.version"]
    assert [method for method, _ in active.asked[1:]] == ["UpdateFeatures", "UpdateFeatures"]
    await connection.close()


async def test_api_versions_finalize_kraft_version(listener: Served) -> None:
    """kafka-features --bootstrap-controller describe reads ApiVersions' features: kraft.version finalized at the
    quorum's level (here 1, at offset 42); supported 0-1, which v3 leaves out (its lowest version is 0)."""
    connection = KafkaConnection(listener[0].address, 10)
    for asked in (ApiVersionsRequest(client_software_name="t", client_software_version="1"), v4_versions()):
        response = await connection.send(asked)
        finalized = [(f.name, int(f.max_version_level)) for f in response.finalized_features]
        assert finalized == [("kraft.version", 1)] and int(response.finalized_features_epoch) == 42
        supported = [(f.name, int(f.min_version), int(f.max_version)) for f in response.supported_features]
        assert supported == ([] if type(asked).__version__ == 3 else [("kraft.version", 0, 1)])
    await connection.close()


def v4_versions() -> Any:
    from kio.schema.api_versions.v4.request import ApiVersionsRequest as V4

    return V4(client_software_name="t", client_software_version="1")
