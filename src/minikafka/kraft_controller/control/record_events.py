"""The structured event a committed record stands for, for the shell to log at replay time (docs/events).

Call with the image *after* replaying the record, so epochs and ISRs are the committed ones; a RemoveTopic also
needs the image before it, the only one that still names the topic.
"""

from __future__ import annotations

from typing import Any

from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    BrokerRegistrationChange,
    FeatureLevel,
    FenceBroker,
    Partition,
    PartitionChange,
    ProducerIds,
    Record,
    RegisterBroker,
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


def describe_record_event(
    record: Record, image: MetadataImage, before: MetadataImage | None = None
) -> tuple[str, dict[str, Any]]:
    match record:
        case RemoveTopic():
            removed = None if before is None else before.topic(record.topic_id)
            return "topic_deleted", {
                "topic": None if removed is None else removed.name,
                "topic_id": str(record.topic_id),
                "partitions": None if removed is None else len(removed.partitions),
            }
        case RegisterBroker():
            registration = image.broker(record.broker_id)
            return "broker_registered", {
                "broker_id": record.broker_id,
                "broker_epoch": None if registration is None else registration.broker_epoch,
                "incarnation_id": record.incarnation_id,
                "rack": record.rack,
                "status": record.status.name,
            }
        case FenceBroker():
            return "broker_fenced", {
                "broker_id": record.broker_id,
                "broker_epoch": record.broker_epoch,
                "reason": record.reason,
                "applied": _broker_current(image, record.broker_id, record.broker_epoch),
            }
        case UnfenceBroker():
            return "broker_unfenced", {
                "broker_id": record.broker_id,
                "broker_epoch": record.broker_epoch,
                "reason": record.reason,
                "applied": _broker_current(image, record.broker_id, record.broker_epoch),
            }
        case BrokerRegistrationChange():
            name = "controlled_shutdown_requested" if record.in_controlled_shutdown else "controlled_shutdown_cancelled"
            return name, {
                "broker_id": record.broker_id,
                "broker_epoch": record.broker_epoch,
                "applied": _broker_current(image, record.broker_id, record.broker_epoch),
            }
        case ProducerIds():
            return "producer_ids_allocated", {
                "broker_id": record.broker_id,
                "broker_epoch": record.broker_epoch,
                "next_producer_id": record.next_producer_id,
            }
        case FeatureLevel():
            return "feature_level_changed", {"name": record.name, "feature_level": record.feature_level}
        case UserScramCredential():  # never the salt or keys: the log says who, not what
            return "user_scram_credential_changed", {
                "user": record.name,
                "mechanism": record.mechanism.mechanism_name,
                "iterations": record.iterations,
            }
        case RemoveUserScramCredential():
            return "user_scram_credential_deleted", {"user": record.name, "mechanism": record.mechanism.mechanism_name}
        case Topic():
            return "topic_created", {"topic": record.name, "topic_id": str(record.topic_id)}
        case TopicConfig():
            return "topic_config_changed", {"topic": record.topic_name, "name": record.name, "value": record.value}
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
            return "partition_changed", fields
    raise TypeError(f"not a metadata record: {record!r}")
