"""DescribeProducers: the idempotent producers a replica of the partition (leader or follower, as in Kafka) knows
from its producer state: id, epoch, last sequence and timestamp; minikafka has no transactions, so no coordinator
epoch nor open transaction (-1)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode

DESCRIBE_PRODUCERS = 61
VERSIONS = {DESCRIBE_PRODUCERS: (0, 0)}


def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(DESCRIBE_PRODUCERS, request.header.api_version)
    topics = []
    for topic in request.body.topics:
        partitions = tuple(_partition(ctx, cls, TopicPartition(topic.name, p)) for p in topic.partition_indexes)
        topics.append(build(sibling(cls, "TopicResponse"), name=topic.name, partitions=partitions))
    return build(cls, throttle_time=0, topics=tuple(topics))


def _partition(ctx: WireContext, cls: type, tp: TopicPartition) -> Any:
    entry = sibling(cls, "PartitionResponse")
    if not ctx.allowed(AclOperation.READ, ResourceType.TOPIC, tp.topic):  # Kafka: READ on the topic
        denied = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        return build(entry, partition_index=tp.partition, error_code=denied, error_message=None, active_producers=())
    manager = ctx.manager
    replica = manager.replicas.get(tp)
    if replica is None or replica.log.offline:
        code = manager.not_hosted_error(tp)
        return build(entry, partition_index=tp.partition, error_code=code, error_message=None, active_producers=())
    state = sibling(cls, "ProducerState")
    producers = []
    for producer_id, producer in sorted(replica.log.producer_state.producers.items()):
        last = producer.batches[-1] if producer.batches else None
        producers.append(
            build(
                state,
                producer_id=producer_id,
                producer_epoch=producer.producer_epoch,
                last_sequence=last.last_seq if last else -1,
                last_timestamp=last.max_timestamp if last else -1,
                coordinator_epoch=producer.coordinator_epoch,
                # Where its open transaction starts here (kafka-transactions --find-hanging reads it); -1: none.
                current_txn_start_offset=replica.log.producer_state.ongoing.get(producer_id, -1),
            )
        )
    active = tuple(producers)
    return build(entry, partition_index=tp.partition, error_code=ErrorCode.NONE, active_producers=active)


HANDLERS = {DESCRIBE_PRODUCERS: handle}
