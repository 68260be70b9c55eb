"""ConsumerGroupDescribe for `minikafka consumer-groups --describe`: a KIP-848 group's epochs, assignor and members
(member epoch, current and target assignment). None when the group is not a consumer-protocol group or the broker
does not offer the API (group.coordinator.rebalance.protocols without consumer): the caller describes it as a
classic group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minikafka.client.kafka_wire_client import KafkaWireClient, request_class
from minikafka.common.errors import ErrorCode, KafkaError

CONSUMER_GROUP_DESCRIBE = 69


@dataclass(frozen=True)
class ConsumerProtocolMember:
    member_id: str
    member_epoch: int
    client_id: str
    host: str
    assignment: list[tuple[str, int]]
    target_assignment: list[tuple[str, int]]
    instance_id: str | None = None


@dataclass(frozen=True)
class ConsumerProtocolGroup:
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ConsumerProtocolMember]


async def describe_consumer_group(client: KafkaWireClient, address: str, group: str) -> ConsumerProtocolGroup | None:
    body = request_class(CONSUMER_GROUP_DESCRIBE, 0)(group_ids=(group,), include_authorized_operations=False)
    try:
        response = await client.connection(address).send(body)
    except KafkaError as error:
        if error.code != ErrorCode.NETWORK_EXCEPTION:
            raise
        return None  # a broker without the API closes the connection, as Kafka does for an unknown key
    entry = response.groups[0]
    if entry.error_code != ErrorCode.NONE:
        return None
    members = [
        ConsumerProtocolMember(
            m.member_id,
            m.member_epoch,
            m.client_id,
            m.client_host,
            _partitions(m.assignment),
            _partitions(m.target_assignment),
            m.instance_id,
        )
        for m in entry.members
    ]
    epochs = (entry.group_epoch, entry.assignment_epoch)
    return ConsumerProtocolGroup(entry.group_state, *epochs, entry.assignor_name, members)


def _partitions(assignment: Any) -> list[tuple[str, int]]:
    return sorted((t.topic_name, int(p)) for t in assignment.topic_partitions for p in t.partitions)
