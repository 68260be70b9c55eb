"""A client without the coordinator's role cannot write, delete or grow an internal topic, on either listener
(real processes, raw requests):

- Produce into `__consumer_offsets` (a forged OffsetCommit record for another group) answers
  INVALID_TOPIC_EXCEPTION (17) on the Kafka listener and on the gRPC listener, and the group's offset stays
  what its coordinator wrote, also after the broker restarts and the coordinator reloads the partition.
- CreatePartitions 5 -> 7 and DeleteTopics of `__consumer_offsets` answer INVALID_TOPIC_EXCEPTION; the topic
  keeps its 5 partitions.
- The coordinator's own writes (an OffsetCommit) still work.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Iterator

import pytest
from cluster_fixtures import eventually, running_cluster

from minikafka.broker.coordinator_runtime.internal_topic import partition_for
from minikafka.broker.group.records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from minikafka.client.consumer_groups_command import find_coordinator
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import sync_channel
from minikafka.common.record_batch import Record, build_batch
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster
from minikafka.pb import broker_pb2, broker_pb2_grpc

pytestmark = pytest.mark.integration

OFFSETS = "__consumer_offsets"
GROUP, TOPIC = "victims", "orders"
SETTINGS = {"offsets.topic.num.partitions": "5", "offsets.topic.replication.factor": "1"}
TIMEOUT = datetime.timedelta(seconds=10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("internal-topics"), 1, 1, **SETTINGS) as started:
        yield started


def forged_commit(offset: int) -> bytes:
    """The record a coordinator writes for GROUP's commit of TOPIC-0 at `offset`."""
    key = encode_key(OffsetCommitKey(GROUP, TOPIC, 0))
    value = encode_value(OffsetCommitValue(offset, -1, "", 0))
    return build_batch([Record(value, key)])


async def commit(client: KafkaWireClient, address: str, offset: int) -> ErrorCode:
    cls = request_class(8, 8)
    partition = nested(cls, "OffsetCommitRequestPartition")(
        partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=None
    )
    topics = (nested(cls, "OffsetCommitRequestTopic")(name=TOPIC, partitions=(partition,)),)
    body = cls(group_id=GROUP, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None, topics=topics)
    response = await client.connection(address).send(body)
    return ErrorCode.of(response.topics[0].partitions[0].error_code)


async def commit_once_topic_known(client: KafkaWireClient, address: str, offset: int) -> ErrorCode:
    """Commit as a Kafka client does: CreateTopics answers once the controller has the topic, and the
    coordinator refuses a commit with the retriable UNKNOWN_TOPIC_OR_PARTITION until its metadata has it."""
    deadline = time.monotonic() + 30
    while (error := await commit(client, address, offset)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        if time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    return error


async def committed(client: KafkaWireClient, address: str) -> int:
    cls = request_class(9, 8)
    topics = (nested(cls, "OffsetFetchRequestTopics")(name=TOPIC, partition_indexes=(0,)),)
    groups = (nested(cls, "OffsetFetchRequestGroup")(group_id=GROUP, topics=topics),)
    response = await client.connection(address).send(cls(groups=groups, require_stable=False))
    return response.groups[0].topics[0].partitions[0].committed_offset


async def wire_produce(client: KafkaWireClient, address: str, partition: int, records: bytes) -> tuple[int, str]:
    cls = request_class(0, 9)
    data = nested(cls, "PartitionProduceData")(index=partition, records=records)
    topic = nested(cls, "TopicProduceData")(name=OFFSETS, partition_data=(data,))
    response = await client.connection(address).send(
        cls(transactional_id=None, acks=-1, timeout=TIMEOUT, topic_data=(topic,))
    )
    result = response.responses[0].partition_responses[0]
    return result.error_code, result.error_message


async def create_topic(client: KafkaWireClient, address: str) -> int:
    cls = request_class(19, 7)
    creatable = nested(cls, "CreatableTopic")
    topic = creatable(name=TOPIC, num_partitions=1, replication_factor=1, assignments=(), configs=())
    response = await client.connection(address).send(cls(topics=(topic,), timeout=TIMEOUT, validate_only=False))
    return response.topics[0].error_code


async def grow_and_delete(client: KafkaWireClient, address: str) -> tuple[int, int]:
    grow = request_class(37, 3)
    topic = nested(grow, "CreatePartitionsTopic")(name=OFFSETS, count=7, assignments=None)
    grown = await client.connection(address).send(grow(topics=(topic,), timeout=TIMEOUT, validate_only=False))
    delete = request_class(20, 6)
    state = nested(delete, "DeleteTopicState")(name=OFFSETS, topic_id=None)
    deleted = await client.connection(address).send(delete(topics=(state,), timeout=TIMEOUT))
    return grown.results[0].error_code, deleted.responses[0].error_code


def partitions_of_offsets_topic(cluster: Cluster) -> int:
    async def run() -> int:
        client = KafkaWireClient(cluster.kafka_bootstrap_servers.split(","))
        try:
            cls = request_class(3, 12)
            topic = nested(cls, "MetadataRequestTopic")(topic_id=None, name=OFFSETS)
            response = await client.any_broker(
                cls(topics=(topic,), allow_auto_topic_creation=False, include_topic_authorized_operations=False)
            )
            return len(response.topics[0].partitions)
        finally:
            await client.close()

    return asyncio.run(run())


def test_clients_cannot_append_to_delete_or_grow_internal_topics(cluster: Cluster) -> None:
    async def run() -> dict[str, object]:
        client = KafkaWireClient(cluster.kafka_bootstrap_servers.split(","))
        try:
            _, address = await find_coordinator(client, GROUP, 30)
            assert await create_topic(client, address) == ErrorCode.NONE
            seen: dict[str, object] = {"commit": await commit_once_topic_known(client, address, 42)}
            partition = partition_for(GROUP, 5)
            seen["wire_produce"] = await wire_produce(client, address, partition, forged_commit(666))
            grpc_produce = broker_pb2.ProduceRequest(acks=-1, timeout_ms=5000)
            grpc_produce.topic_data.add(name=OFFSETS).partition_data.add(index=partition, records=forged_commit(667))
            stub = broker_pb2_grpc.BrokerStub(sync_channel(cluster.brokers[0].address))
            answer = stub.Produce(grpc_produce, timeout=10).responses[0].partition_responses[0]
            seen["grpc_produce"] = (answer.error_code, answer.error_message)
            seen["grow_delete"] = await grow_and_delete(client, address)
            seen["committed"] = await committed(client, address)
            return seen
        finally:
            await client.close()

    seen = asyncio.run(run())
    print(seen)  # the errors a hostile client now gets, for the report
    assert seen["commit"] == ErrorCode.NONE  # the coordinator's own write
    refused = (ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot append to internal topic {OFFSETS}")
    assert seen["wire_produce"] == refused
    assert seen["grpc_produce"] == refused
    assert seen["grow_delete"] == (ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.INVALID_TOPIC_EXCEPTION)
    assert seen["committed"] == 42
    assert partitions_of_offsets_topic(cluster) == 5

    # The coordinator reloads the partition from its log after a restart: nothing forged is in it.
    broker = cluster.brokers[0]
    faults = Faults(cluster)
    faults.stop(broker.node_id)
    faults.start(broker.node_id)

    async def reloaded() -> int:
        client = KafkaWireClient(cluster.kafka_bootstrap_servers.split(","))
        try:
            _, address = await find_coordinator(client, GROUP, 30)
            return await committed(client, address)
        finally:
            await client.close()

    assert eventually(lambda: asyncio.run(reloaded()) == 42, 60, "the group's own commit after the restart")
