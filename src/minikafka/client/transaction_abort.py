"""`minikafka transactions --abort`: Kafka's kafka-transactions abort of a hanging transaction. The transaction is
named by the offset where it starts in a partition (DescribeProducers on the leader finds the producer whose open
transaction starts there), or directly by producer id, epoch and coordinator epoch; the partition's leader is then
sent WriteTxnMarkers with an ABORT marker of that producer (Kafka's Admin.abortTransaction), which needs
CLUSTER_ACTION on the cluster. The marker ends the transaction in that partition only, and releases its LSO."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.cli_support import CliError
from minikafka.common.errors import ErrorCode, KafkaError

METADATA, DESCRIBE_PRODUCERS, WRITE_TXN_MARKERS = 3, 61, 27


class ProducerLine(Protocol):
    """One active producer of a DescribeProducers answer."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    current_txn_start_offset: int


@dataclass(frozen=True)
class AbortSpec:
    """Kafka's AbortTransactionSpec: the marker to write, and where."""

    topic: str
    partition: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int


def spec_for(topic: str, partition: int, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> AbortSpec:
    # A producer that hung before any marker of its own has no coordinator epoch (-1): 0 is at or below any
    # coordinator's, so the leader takes the marker (as kafka-transactions does).
    return AbortSpec(topic, partition, producer_id, producer_epoch, max(coordinator_epoch, 0))


def spec_at_offset(topic: str, partition: int, start_offset: int, producers: Iterable[ProducerLine]) -> AbortSpec:
    """The abort of the transaction open in the partition from `start_offset`; CliError when none starts there."""
    for producer in producers:
        if producer.current_txn_start_offset >= 0 and producer.current_txn_start_offset == start_offset:
            return spec_for(topic, partition, producer.producer_id, producer.producer_epoch, producer.coordinator_epoch)
    raise CliError(f"Could not find any open transactions starting at offset {start_offset} on partition "
                   f"{topic}-{partition}")  # fmt: skip


async def leader_of(client: KafkaWireClient, topic: str, partition: int) -> str:
    """The Kafka address of the partition's leader; KafkaError when it has none or the topic is unknown."""
    response = await client.any_broker(request_class(METADATA, 9)(topics=(nested(request_class(METADATA, 9),
                                       "MetadataRequestTopic")(name=topic),), allow_auto_topic_creation=False,
                                       include_cluster_authorized_operations=False,
                                       include_topic_authorized_operations=False))  # fmt: skip
    addresses = {b.node_id: f"{b.host}:{b.port}" for b in response.brokers}
    for found in response.topics:
        error = ErrorCode.of(found.error_code)
        if error != ErrorCode.NONE:
            raise KafkaError(error, f"Metadata for topic {topic}")
        for line in found.partitions:
            if line.partition_index == partition and line.leader_id in addresses:
                return addresses[line.leader_id]
    raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{topic}-{partition} has no leader now")


async def describe_producers(client: KafkaWireClient, leader: str, topic: str, partition: int) -> list[Any]:
    cls = request_class(DESCRIBE_PRODUCERS, 0)
    request = cls(topics=(nested(cls, "TopicRequest")(name=topic, partition_indexes=(partition,)),))
    answer = (await client.connection(leader).send(request)).topics[0].partitions[0]
    error = ErrorCode.of(answer.error_code)
    if error != ErrorCode.NONE:
        raise KafkaError(error, f"DescribeProducers for {topic}-{partition}")
    return list(answer.active_producers)


async def write_abort_marker(client: KafkaWireClient, leader: str, spec: AbortSpec) -> None:
    """WriteTxnMarkers (v1) to the leader with the ABORT marker; KafkaError with the partition's error if any."""
    cls = request_class(WRITE_TXN_MARKERS, 1)
    topic = nested(cls, "WritableTxnMarkerTopic")(name=spec.topic, partition_indexes=(spec.partition,))
    marker = nested(cls, "WritableTxnMarker")(
        producer_id=spec.producer_id,
        producer_epoch=spec.producer_epoch,
        transaction_result=False,
        topics=(topic,),
        coordinator_epoch=spec.coordinator_epoch,
    )
    response = await client.connection(leader).send(cls(markers=(marker,)))
    for result in response.markers:
        for line in result.topics:
            for answer in line.partitions:
                error = ErrorCode.of(answer.error_code)
                if error != ErrorCode.NONE:
                    raise KafkaError(error, f"WriteTxnMarkers (ABORT) for {spec}")


async def abort(
    client: KafkaWireClient,
    topic: str,
    partition: int,
    start_offset: int | None,
    producer: tuple[int, int, int] | None,
) -> AbortSpec:
    """Abort by start offset, or by (producer id, producer epoch, coordinator epoch); returns what was written."""
    leader = await leader_of(client, topic, partition)
    if start_offset is not None:
        producers = await describe_producers(client, leader, topic, partition)
        spec = spec_at_offset(topic, partition, start_offset, producers)
    else:
        assert producer is not None
        spec = spec_for(topic, partition, *producer)
    await write_abort_marker(client, leader, spec)
    return spec
