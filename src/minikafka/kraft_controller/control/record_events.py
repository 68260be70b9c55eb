"""The structured event a committed record stands for, for the shell to log at replay time (docs/events).

Call with the image *after* replaying the record, so epochs and ISRs are the committed ones; a RemoveTopic also
needs the image before it, the only one that still names the topic.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from minikafka.common.acl import AclBinding
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    AccessControlEntry,
    BrokerRegistrationChange,
    ConfigRecord,
    ConfigResourceType,
    FeatureLevel,
    FenceBroker,
    Partition,
    PartitionChange,
    ProducerIds,
    Record,
    RegisterBroker,
    RegisterController,
    RemoveAccessControlEntry,
    RemoveTopic,
    RemoveUserScramCredential,
    Topic,
    TopicConfig,
    UnfenceBroker,
    UserScramCredential,
)


def _broker_current(image: MetadataImage, broker_id: int, broker_epoch: int) -> bool:
    registration = image.broker(broker_id)
    return registration is not None and registration.broker_epoch == broker_epoch


# The fields of a replay event that say which record it stands for: two controllers that replayed the same record
# at an offset log the same values of these (MetadataLogMatching compares them, in `analyze` and the simulator).
RECORD_IDENTITY_FIELDS = (
    "event",
    "topic_id",
    "partition",
    "leader",
    "isr",
    "replicas",
    "leader_epoch",
    "partition_epoch",
    "reason",
    "broker_id",
    "broker_epoch",
    "applied",
    "topic",
    "name",  # a config record's key and value, its topic or group, an ACL's resource and principal
    "value",
    "group",
    "resource_name",
    "principal",
)


class RecordEvent(NamedTuple):
    name: str
    fields: dict[str, Any]


def describe_record_event(record: Record, image: MetadataImage, before: MetadataImage | None = None) -> RecordEvent:
    event = _cluster_event(record, image, before) or _topic_event(record, image, before) or _controller_event(record)
    if event is None:
        raise TypeError(f"not a metadata record: {record!r}")
    return event


def _controller_event(record: Record) -> RecordEvent | None:
    if not isinstance(record, RegisterController):
        return None
    endpoints = [f"{e.name}://{e.host}:{e.port}" for e in record.endpoints]
    return RecordEvent(
        "controller_registered",
        {"controller_id": record.controller_id, "incarnation_id": record.incarnation_id, "endpoints": endpoints},
    )


def _cluster_event(record: Record, image: MetadataImage, before: MetadataImage | None) -> RecordEvent | None:
    """Brokers, features, producer ids and credentials."""
    match record:
        case RegisterBroker():
            registration = image.broker(record.broker_id)
            return RecordEvent(
                "broker_registered",
                {
                    "broker_id": record.broker_id,
                    "broker_epoch": None if registration is None else registration.broker_epoch,
                    "incarnation_id": record.incarnation_id,
                    "rack": record.rack,
                    "status": record.status.name,
                },
            )
        case FenceBroker():
            return RecordEvent(
                "broker_fenced",
                {
                    "broker_id": record.broker_id,
                    "broker_epoch": record.broker_epoch,
                    "reason": record.reason,
                    "applied": _broker_current(image, record.broker_id, record.broker_epoch),
                },
            )
        case UnfenceBroker():
            return RecordEvent(
                "broker_unfenced",
                {
                    "broker_id": record.broker_id,
                    "broker_epoch": record.broker_epoch,
                    "reason": record.reason,
                    "applied": _broker_current(image, record.broker_id, record.broker_epoch),
                },
            )
        case BrokerRegistrationChange():
            name = "controlled_shutdown_requested" if record.in_controlled_shutdown else "controlled_shutdown_cancelled"
            return RecordEvent(
                name,
                {
                    "broker_id": record.broker_id,
                    "broker_epoch": record.broker_epoch,
                    "applied": _broker_current(image, record.broker_id, record.broker_epoch),
                },
            )
        case ProducerIds():
            return RecordEvent(
                "producer_ids_allocated",
                {
                    "broker_id": record.broker_id,
                    "broker_epoch": record.broker_epoch,
                    "next_producer_id": record.next_producer_id,
                },
            )
        case FeatureLevel():
            return RecordEvent("feature_level_changed", {"name": record.name, "feature_level": record.feature_level})
        case UserScramCredential():  # never the salt or keys: the log says who, not what
            return RecordEvent(
                "user_scram_credential_changed",
                {
                    "user": record.name,
                    "mechanism": record.mechanism.mechanism_name,
                    "iterations": record.iterations,
                },
            )
        case RemoveUserScramCredential():
            return RecordEvent(
                "user_scram_credential_deleted", {"user": record.name, "mechanism": record.mechanism.mechanism_name}
            )
        case AccessControlEntry():
            return RecordEvent("acl_created", {"acl_id": record.id, **acl_fields(record.binding)})
        case RemoveAccessControlEntry():
            removed = None if before is None else before.acls.get(record.id)
            return RecordEvent("acl_deleted", {"acl_id": record.id, **({} if removed is None else acl_fields(removed))})
    return None


def acl_fields(binding: AclBinding) -> dict[str, str]:
    """An ACL as the events show it: Kafka's names for its enums."""
    return {
        "resource_type": binding.resource_type.name,
        "resource_name": binding.resource_name,
        "pattern_type": binding.pattern_type.name,
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation.name,
        "permission_type": binding.permission_type.name,
    }


def _topic_event(record: Record, image: MetadataImage, before: MetadataImage | None) -> RecordEvent | None:
    """Topics, their configs and partitions."""
    match record:
        case RemoveTopic():
            removed = None if before is None else before.topic(record.topic_id)
            return RecordEvent(
                "topic_deleted",
                {
                    "topic": None if removed is None else removed.name,
                    "topic_id": str(record.topic_id),
                    "partitions": None if removed is None else len(removed.partitions),
                },
            )
        case Topic():
            return RecordEvent("topic_created", {"topic": record.name, "topic_id": str(record.topic_id)})
        case TopicConfig():
            return RecordEvent(
                "topic_config_changed", {"topic": record.topic_name, "name": record.name, "value": record.value}
            )
        case ConfigRecord() if record.resource_type is ConfigResourceType.TOPIC:
            return RecordEvent(
                "topic_config_changed", {"topic": record.resource_name, "name": record.name, "value": record.value}
            )
        case ConfigRecord() if record.resource_type is ConfigResourceType.GROUP:
            return RecordEvent(
                "group_config_changed", {"group": record.resource_name, "name": record.name, "value": record.value}
            )
        case ConfigRecord():
            return RecordEvent(
                "broker_config_changed", {"broker": record.resource_name, "name": record.name, "value": record.value}
            )
        case Partition() | PartitionChange():
            topic = image.topic(record.topic_id)
            partition = image.partition(record.topic_id, record.partition_id)
            fields: dict[str, Any] = {
                "topic": None if topic is None else topic.name,
                "topic_id": str(record.topic_id),
                "partition": record.partition_id,
                "reason": "create" if isinstance(record, Partition) else record.reason,
            }
            if partition is not None:
                fields |= {
                    "leader": partition.leader,
                    "isr": list(partition.isr),
                    "replicas": list(partition.replicas),
                    "adding_replicas": list(partition.adding_replicas),
                    "removing_replicas": list(partition.removing_replicas),
                    "leader_epoch": partition.leader_epoch,
                    "partition_epoch": partition.partition_epoch,
                    "leader_recovery_state": partition.leader_recovery_state.name,
                    "elr": list(partition.elr),
                    "last_known_elr": list(partition.last_known_elr),
                }
            return RecordEvent("partition_changed", fields)
    return None
