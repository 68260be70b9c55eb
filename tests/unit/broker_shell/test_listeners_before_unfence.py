"""A broker started on an empty disk (wiped) serves no request before the controller first unfenced it, as a Kafka
broker enables request processing on its listeners only then: its Kafka listener accepts no connection, its gRPC
client and inter-broker listeners answer UNAVAILABLE, even once its metadata caught up. Its authorizer allows only
super users before the catch-up, even with allow.everyone.if.no.acl.found (its empty image would otherwise allow
what the ACLs deny). The Fault service stays open."""

from __future__ import annotations

import asyncio
import signal
import struct
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from minikafka.broker.client_authorizer import Caller
from minikafka.broker.config import BrokerConfig
from minikafka.broker.process import Broker, build_broker, start_listeners
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.config import load_config
from minikafka.common.standard_authorizer import STANDARD_AUTHORIZER
from minikafka.pb import broker_pb2, broker_pb2_grpc, fault_pb2, fault_pb2_grpc

NOT_ANSWERED_WITHIN_S = 0.5  # how long a request must go unanswered before the unfence


def broker_config(data_dir: Path) -> BrokerConfig:
    props = {
        "node.id": "1",
        "process.roles": "broker",
        "listeners": "GRPC://127.0.0.1:0,PLAINTEXT://127.0.0.1:0,BROKER://127.0.0.1:0",
        "inter.broker.listener.name": "BROKER",
        "controller.quorum.voters": "10@127.0.0.1:9",  # never reached: the broker stays before its catch-up
        "log.dirs": str(data_dir),
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "allow.everyone.if.no.acl.found": "true",
        "super.users": "User:admin",
        "fault.injection.enable": "true",
    }
    return load_config(BrokerConfig, props)  # type: ignore[no-any-return]


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    started = build_broker(broker_config(tmp_path / "wiped"))
    await start_listeners(started)
    try:
        yield started
    finally:
        for kafka_listener in started.kafka_listeners:
            await kafka_listener.stop()
        for server in started.servers:
            await server.server.stop(grace=None)
        started.logs.close_all(0)
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().remove_signal_handler(sig)


def grpc_address(broker: Broker, name: str) -> str:
    index = [listener.name for listener in broker.config.grpc_listeners].index(name)
    return broker.servers[index].address


async def list_offsets(address: str) -> grpc.StatusCode | broker_pb2.ListOffsetsResponse:
    request = broker_pb2.ListOffsetsRequest(
        replica_id=-1,
        topics=[
            broker_pb2.ListOffsetsRequest.ListOffsetsTopic(
                name="orders", partitions=[broker_pb2.ListOffsetsRequest.ListOffsetsPartition(timestamp=-1)]
            )
        ],
    )
    async with grpc.aio.insecure_channel(address) as channel:
        try:
            return await broker_pb2_grpc.BrokerStub(channel).ListOffsets(request, timeout=10)
        except grpc.aio.AioRpcError as error:
            return error.code()


async def api_versions(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
    """Send ApiVersions v0 and read its answer's correlation id."""
    client_id = b"t"
    body = struct.pack(">hhih", 18, 0, 7, len(client_id)) + client_id
    writer.write(struct.pack(">i", len(body)) + body)
    await writer.drain()
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return int(struct.unpack(">i", (await reader.readexactly(size))[:4])[0])


@pytest.mark.parametrize("listener", ["GRPC", "BROKER"])
async def test_a_grpc_listener_answers_unavailable_until_first_unfenced(broker: Broker, listener: str) -> None:
    broker.lifecycle.caught_up.set()  # the controller's heartbeat answer said is_caught_up, not yet unfenced
    assert await list_offsets(grpc_address(broker, listener)) == grpc.StatusCode.UNAVAILABLE
    broker.lifecycle.initially_unfenced.set()  # a heartbeat answer unfenced it
    answer = await list_offsets(grpc_address(broker, listener))
    assert isinstance(answer, broker_pb2.ListOffsetsResponse)


async def test_the_fault_service_stays_open(broker: Broker) -> None:
    async with grpc.aio.insecure_channel(grpc_address(broker, "GRPC")) as channel:
        state = await fault_pb2_grpc.FaultStub(channel).DescribeState(fault_pb2.DescribeStateRequest(), timeout=10)
    assert state is not None


async def test_the_kafka_listener_accepts_connections_only_once_first_unfenced(broker: Broker) -> None:
    (kafka_listener,) = broker.kafka_listeners
    broker.lifecycle.caught_up.set()
    reader, writer = await asyncio.open_connection(kafka_listener.host, kafka_listener.port)
    try:
        answer = asyncio.ensure_future(api_versions(reader, writer))
        done, _ = await asyncio.wait({answer}, timeout=NOT_ANSWERED_WITHIN_S)
        assert not done, "a broker not unfenced answered a Kafka request"
        broker.lifecycle.initially_unfenced.set()
        assert await asyncio.wait_for(answer, timeout=10) == 7
    finally:
        writer.close()


async def test_the_authorizer_allows_only_super_users_until_caught_up(broker: Broker) -> None:
    authorizer = broker.manager.authorizer
    alice, admin = Caller("User:alice", "127.0.0.1"), Caller("User:admin", "127.0.0.1")
    write, topic = AclOperation.WRITE, ResourceType.TOPIC
    assert not authorizer.allowed(alice, write, topic, "orders")  # not allowed by the empty image's "no acl"
    assert not authorizer.allowed_on_some(alice, write, topic)
    assert authorizer.allowed(admin, write, topic, "orders")
    broker.lifecycle.caught_up.set()
    assert authorizer.allowed(alice, write, topic, "orders")  # allow.everyone.if.no.acl.found, now from real ACLs
