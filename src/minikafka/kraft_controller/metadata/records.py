"""KRaft metadata records: frozen dataclasses and their protobuf encoding.

Cluster state changes only by replaying these records in log order (a record's offset is its identity). Brokers read
them too, so nothing here is controller-only. `encode_record` / `decode_record` go through
`proto/minikafka/pb/metadata.proto`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, cast

from minikafka.common.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType, enum_of
from minikafka.common.scram import ScramMechanism
from minikafka.pb import common_pb2, metadata_pb2

NO_LEADER = -1
# A RegisterBroker record written by the controller leaves its epoch to be its own offset.
EPOCH_FROM_OFFSET = -1


class BrokerStatus(IntEnum):
    """Where a registered broker stands; the proto's BrokerStatus numbers."""

    FENCED = 0
    UNFENCED = 1
    CONTROLLED_SHUTDOWN = 2


class LeaderRecoveryState(IntEnum):
    """Kafka's LeaderRecoveryState: RECOVERING only after an unclean election (never done here)."""

    RECOVERED = 0
    RECOVERING = 1


@dataclass(frozen=True)
class Endpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True)
class RegisterBroker:
    broker_id: int
    incarnation_id: str
    endpoints: tuple[Endpoint, ...] = ()
    rack: str = ""
    broker_epoch: int = EPOCH_FROM_OFFSET
    status: BrokerStatus = BrokerStatus.FENCED


@dataclass(frozen=True)
class RegisterController:
    """Kafka's ControllerRegistrationRecord (KIP-919): where a controller serves Kafka's protocol."""

    controller_id: int
    incarnation_id: str
    endpoints: tuple[Endpoint, ...] = ()


@dataclass(frozen=True)
class FenceBroker:
    broker_id: int
    broker_epoch: int
    reason: str = ""


@dataclass(frozen=True)
class UnfenceBroker:
    broker_id: int
    broker_epoch: int
    reason: str = ""


@dataclass(frozen=True)
class BrokerRegistrationChange:
    broker_id: int
    broker_epoch: int
    in_controlled_shutdown: bool


@dataclass(frozen=True)
class Topic:
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True)
class Partition:
    topic_id: uuid.UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()  # KIP-966 eligible leader replicas
    last_known_elr: tuple[int, ...] = ()


@dataclass(frozen=True)
class PartitionChange:
    """A delta: None means unchanged. Replay bumps the partition epoch, and the leader epoch if the leader moves or
    a replica leaves the replica set (its fetches must be fenced)."""

    topic_id: uuid.UUID
    partition_id: int
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    leader_recovery_state: LeaderRecoveryState | None = None
    reason: str = ""
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    elr: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True)
class TopicConfig:
    """One per-topic config key (e.g. `min.insync.replicas`, Kafka's name); value None deletes it. Read from logs
    written before topic configs became Kafka's ConfigRecord (resource type TOPIC); no longer written."""

    topic_name: str
    name: str
    value: str | None


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type numbers."""

    TOPIC = 2
    BROKER = 4
    GROUP = 32  # a consumer or share group's configs (KIP-848, KIP-932)


# The BROKER resource name of the cluster-wide default (Kafka's DYNAMIC_DEFAULT_BROKER_CONFIG).
CLUSTER_DEFAULT = ""


@dataclass(frozen=True)
class ConfigRecord:
    """Kafka's ConfigRecord: one dynamic config key of a topic, of one broker (its id as the name) or of every broker
    (the name CLUSTER_DEFAULT); value None deletes it."""

    resource_type: ConfigResourceType
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True)
class ProducerIds:
    """Kafka's ProducerIdsRecord: producer ids below `next_producer_id` are handed out (the last block to
    `broker_id` at `broker_epoch`)."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True)
class RemoveTopic:
    """Kafka's RemoveTopicRecord: the topic, its partitions and its configs leave the image."""

    topic_id: uuid.UUID


ELIGIBLE_LEADER_REPLICAS_VERSION = "eligible.leader.replicas.version"
TRANSACTION_VERSION = "transaction.version"  # KIP-890: 2 bumps the producer epoch at every transaction's end
# The levels this software can run at (Kafka's supported features), the same on every node: brokers advertise them in
# ApiVersions and the controller refuses UpdateFeatures outside them.
SUPPORTED_FEATURE_LEVELS: dict[str, tuple[int, int]] = {
    ELIGIBLE_LEADER_REPLICAS_VERSION: (0, 1),
    TRANSACTION_VERSION: (0, 2),
}


@dataclass(frozen=True)
class FeatureLevel:
    """Kafka's FeatureLevelRecord: a finalized feature version every node reads (level 0 takes it out of the
    finalized features)."""

    name: str
    feature_level: int


@dataclass(frozen=True)
class UserScramCredential:
    """Kafka's UserScramCredentialRecord: what a server keeps of a user's password for one SCRAM mechanism."""

    name: str
    mechanism: ScramMechanism
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True)
class RemoveUserScramCredential:
    """Kafka's RemoveUserScramCredentialRecord."""

    name: str
    mechanism: ScramMechanism


@dataclass(frozen=True)
class AccessControlEntry:
    """Kafka's AccessControlEntryRecord: one ACL binding, named by its id (a UUID)."""

    id: str
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    @property
    def binding(self) -> AclBinding:
        return AclBinding(
            self.resource_type,
            self.resource_name,
            self.pattern_type,
            self.principal,
            self.host,
            self.operation,
            self.permission_type,
        )

    @classmethod
    def of(cls, acl_id: str, binding: AclBinding) -> AccessControlEntry:
        return cls(
            acl_id,
            binding.resource_type,
            binding.resource_name,
            binding.pattern_type,
            binding.principal,
            binding.host,
            binding.operation,
            binding.permission_type,
        )


@dataclass(frozen=True)
class RemoveAccessControlEntry:
    """Kafka's RemoveAccessControlEntryRecord."""

    id: str


Record = (
    RegisterBroker
    | RegisterController
    | FenceBroker
    | UnfenceBroker
    | BrokerRegistrationChange
    | Topic
    | Partition
    | PartitionChange
    | TopicConfig
    | ConfigRecord
    | RemoveTopic
    | ProducerIds
    | FeatureLevel
    | UserScramCredential
    | RemoveUserScramCredential
    | AccessControlEntry
    | RemoveAccessControlEntry
)


class RecordDecodeError(ValueError):
    """Bytes that are not a metadata record this version understands."""


def _uuid_bytes(value: uuid.UUID) -> bytes:
    return value.bytes


def _uuid_of(raw: bytes) -> uuid.UUID:
    if len(raw) != 16:
        raise RecordDecodeError(f"topic id must be 16 bytes, got {len(raw)}")
    return uuid.UUID(bytes=raw)


def _replica_list(change: metadata_pb2.PartitionChangeRecord, name: str) -> tuple[int, ...] | None:
    return tuple(getattr(change, name).broker_ids) if change.HasField(name) else None


# PartitionChange's optional replica lists: (dataclass field, proto field).
_REPLICA_LIST_FIELDS = (
    ("replicas", "replicas"),
    ("removing_replicas", "removing_replicas"),
    ("adding_replicas", "adding_replicas"),
    ("elr", "eligible_leader_replicas"),
    ("last_known_elr", "last_known_elr"),
)


@dataclass(frozen=True)
class _Encoded:
    field: str  # the MetadataRecord oneof's field
    message: Any


def endpoints_to_proto(endpoints: Iterable[Endpoint]) -> list[common_pb2.Endpoint]:
    return [common_pb2.Endpoint(name=e.name, host=e.host, port=e.port) for e in endpoints]


def endpoints_from_proto(messages: Iterable[common_pb2.Endpoint]) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(e.name, e.host, e.port) for e in messages)


def to_proto(record: Record) -> metadata_pb2.MetadataRecord:
    encoded = (
        _encode_cluster_record(record)
        or _encode_topic_record(record)
        or _encode_acl_record(record)
        or _encode_controller_record(record)
    )
    if encoded is None:
        raise TypeError(f"not a metadata record: {record!r}")
    message = metadata_pb2.MetadataRecord()
    getattr(message, encoded.field).CopyFrom(encoded.message)
    return message


def _encode_cluster_record(record: Record) -> _Encoded | None:
    """Brokers, features, producer ids and credentials."""
    match record:
        case RegisterBroker():
            return _Encoded(
                "register_broker",
                metadata_pb2.RegisterBrokerRecord(
                    broker_id=record.broker_id,
                    incarnation_id=record.incarnation_id,
                    endpoints=endpoints_to_proto(record.endpoints),
                    rack=record.rack,
                    broker_epoch=record.broker_epoch,
                    # the proto enum's numbers (protobuf takes the int; its stubs name the enum type only)
                    status=cast("metadata_pb2.BrokerStatus", int(record.status)),
                ),
            )
        case FenceBroker():
            return _Encoded(
                "fence_broker",
                metadata_pb2.FenceBrokerRecord(
                    broker_id=record.broker_id, broker_epoch=record.broker_epoch, reason=record.reason
                ),
            )
        case UnfenceBroker():
            return _Encoded(
                "unfence_broker",
                metadata_pb2.UnfenceBrokerRecord(
                    broker_id=record.broker_id, broker_epoch=record.broker_epoch, reason=record.reason
                ),
            )
        case BrokerRegistrationChange():
            return _Encoded(
                "broker_registration_change",
                metadata_pb2.BrokerRegistrationChangeRecord(
                    broker_id=record.broker_id,
                    broker_epoch=record.broker_epoch,
                    in_controlled_shutdown=record.in_controlled_shutdown,
                ),
            )
        case ProducerIds():
            return _Encoded(
                "producer_ids",
                metadata_pb2.ProducerIdsRecord(
                    broker_id=record.broker_id,
                    broker_epoch=record.broker_epoch,
                    next_producer_id=record.next_producer_id,
                ),
            )
        case FeatureLevel():
            return _Encoded(
                "feature_level", metadata_pb2.FeatureLevelRecord(name=record.name, feature_level=record.feature_level)
            )
        case UserScramCredential():
            return _Encoded(
                "user_scram_credential",
                metadata_pb2.UserScramCredentialRecord(
                    name=record.name,
                    mechanism=int(record.mechanism),
                    salt=record.salt,
                    stored_key=record.stored_key,
                    server_key=record.server_key,
                    iterations=record.iterations,
                ),
            )
        case RemoveUserScramCredential():
            return _Encoded(
                "remove_user_scram_credential",
                metadata_pb2.RemoveUserScramCredentialRecord(name=record.name, mechanism=int(record.mechanism)),
            )
    return None


def _encode_controller_record(record: Record) -> _Encoded | None:
    """Controllers (KIP-919)."""
    if isinstance(record, RegisterController):
        return _Encoded(
            "register_controller",
            metadata_pb2.RegisterControllerRecord(
                controller_id=record.controller_id,
                incarnation_id=record.incarnation_id,
                endpoints=endpoints_to_proto(record.endpoints),
            ),
        )
    return None


def _encode_acl_record(record: Record) -> _Encoded | None:
    """ACLs (KIP-801)."""
    match record:
        case AccessControlEntry():
            return _Encoded(
                "access_control_entry",
                metadata_pb2.AccessControlEntryRecord(
                    id=record.id,
                    resource_type=int(record.resource_type),
                    resource_name=record.resource_name,
                    pattern_type=int(record.pattern_type),
                    principal=record.principal,
                    host=record.host,
                    operation=int(record.operation),
                    permission_type=int(record.permission_type),
                ),
            )
        case RemoveAccessControlEntry():
            return _Encoded("remove_access_control_entry", metadata_pb2.RemoveAccessControlEntryRecord(id=record.id))
    return None


def _encode_topic_record(record: Record) -> _Encoded | None:
    """Topics, partitions and topic configs."""
    match record:
        case Topic():
            return _Encoded("topic", metadata_pb2.TopicRecord(name=record.name, topic_id=_uuid_bytes(record.topic_id)))
        case Partition():
            return _Encoded(
                "partition",
                metadata_pb2.PartitionRecord(
                    topic_id=_uuid_bytes(record.topic_id),
                    partition_id=record.partition_id,
                    replicas=record.replicas,
                    isr=record.isr,
                    leader=record.leader,
                    leader_epoch=record.leader_epoch,
                    partition_epoch=record.partition_epoch,
                    leader_recovery_state=int(record.leader_recovery_state),
                    removing_replicas=record.removing_replicas,
                    adding_replicas=record.adding_replicas,
                    eligible_leader_replicas=record.elr,
                    last_known_elr=record.last_known_elr,
                ),
            )
        case PartitionChange():
            change = metadata_pb2.PartitionChangeRecord(
                topic_id=_uuid_bytes(record.topic_id),
                partition_id=record.partition_id,
                isr_changed=record.isr is not None,
                isr=record.isr or (),
                reason=record.reason,
            )
            if record.leader is not None:
                change.leader = record.leader
            if record.leader_recovery_state is not None:
                change.leader_recovery_state = int(record.leader_recovery_state)
            for name, field in _REPLICA_LIST_FIELDS:
                value = getattr(record, name)
                if value is not None:
                    getattr(change, field).CopyFrom(metadata_pb2.ReplicaList(broker_ids=value))
            return _Encoded("partition_change", change)
        case TopicConfig():
            config = metadata_pb2.TopicConfigRecord(topic_name=record.topic_name, name=record.name)
            if record.value is not None:
                config.value = record.value
            return _Encoded("topic_config", config)
        case ConfigRecord():
            message = metadata_pb2.ConfigRecord(
                resource_type=int(record.resource_type), resource_name=record.resource_name, name=record.name
            )
            if record.value is not None:
                message.value = record.value
            return _Encoded("config", message)
        case RemoveTopic():
            return _Encoded("remove_topic", metadata_pb2.RemoveTopicRecord(topic_id=_uuid_bytes(record.topic_id)))
    return None


def from_proto(message: metadata_pb2.MetadataRecord) -> Record:
    kind = message.WhichOneof("record")
    record = (
        _decode_cluster_record(kind, message)
        or _decode_topic_record(kind, message)
        or _decode_acl_record(kind, message)
        or _decode_controller_record(kind, message)
    )
    if record is None:
        raise RecordDecodeError(f"unknown or empty metadata record kind: {kind!r}")
    return record


def _decode_controller_record(kind: str | None, message: metadata_pb2.MetadataRecord) -> Record | None:
    if kind != "register_controller":
        return None
    m = message.register_controller
    return RegisterController(m.controller_id, m.incarnation_id, endpoints_from_proto(m.endpoints))


def _decode_cluster_record(kind: str | None, message: metadata_pb2.MetadataRecord) -> Record | None:
    """Brokers, features, producer ids and credentials."""
    match kind:
        case "register_broker":
            m = message.register_broker
            return RegisterBroker(
                broker_id=m.broker_id,
                incarnation_id=m.incarnation_id,
                endpoints=endpoints_from_proto(m.endpoints),
                rack=m.rack,
                broker_epoch=m.broker_epoch,
                status=BrokerStatus(m.status),
            )
        case "fence_broker":
            f = message.fence_broker
            return FenceBroker(broker_id=f.broker_id, broker_epoch=f.broker_epoch, reason=f.reason)
        case "unfence_broker":
            u = message.unfence_broker
            return UnfenceBroker(broker_id=u.broker_id, broker_epoch=u.broker_epoch, reason=u.reason)
        case "broker_registration_change":
            c = message.broker_registration_change
            return BrokerRegistrationChange(
                broker_id=c.broker_id, broker_epoch=c.broker_epoch, in_controlled_shutdown=c.in_controlled_shutdown
            )
        case "producer_ids":
            ids = message.producer_ids
            return ProducerIds(ids.broker_id, ids.broker_epoch, ids.next_producer_id)
        case "feature_level":
            return FeatureLevel(name=message.feature_level.name, feature_level=message.feature_level.feature_level)
        case "user_scram_credential":
            credential = message.user_scram_credential
            return UserScramCredential(
                credential.name,
                ScramMechanism(credential.mechanism),
                credential.salt,
                credential.stored_key,
                credential.server_key,
                credential.iterations,
            )
        case "remove_user_scram_credential":
            r = message.remove_user_scram_credential
            return RemoveUserScramCredential(r.name, ScramMechanism(r.mechanism))
    return None


def _decode_acl_record(kind: str | None, message: metadata_pb2.MetadataRecord) -> Record | None:
    """ACLs (KIP-801)."""
    match kind:
        case "access_control_entry":
            acl = message.access_control_entry
            return AccessControlEntry(
                acl.id,
                enum_of(ResourceType, acl.resource_type),
                acl.resource_name,
                enum_of(PatternType, acl.pattern_type),
                acl.principal,
                acl.host,
                enum_of(AclOperation, acl.operation),
                enum_of(AclPermissionType, acl.permission_type),
            )
        case "remove_access_control_entry":
            return RemoveAccessControlEntry(message.remove_access_control_entry.id)
    return None


def _decode_topic_record(kind: str | None, message: metadata_pb2.MetadataRecord) -> Record | None:
    """Topics, partitions and topic configs."""
    match kind:
        case "topic":
            return Topic(name=message.topic.name, topic_id=_uuid_of(message.topic.topic_id))
        case "partition":
            p = message.partition
            return Partition(
                topic_id=_uuid_of(p.topic_id),
                partition_id=p.partition_id,
                replicas=tuple(p.replicas),
                isr=tuple(p.isr),
                leader=p.leader,
                leader_epoch=p.leader_epoch,
                partition_epoch=p.partition_epoch,
                leader_recovery_state=LeaderRecoveryState(p.leader_recovery_state),
                removing_replicas=tuple(p.removing_replicas),
                adding_replicas=tuple(p.adding_replicas),
                elr=tuple(p.eligible_leader_replicas),
                last_known_elr=tuple(p.last_known_elr),
            )
        case "partition_change":
            pc = message.partition_change
            return PartitionChange(
                topic_id=_uuid_of(pc.topic_id),
                partition_id=pc.partition_id,
                leader=pc.leader if pc.HasField("leader") else None,
                isr=tuple(pc.isr) if pc.isr_changed else None,
                leader_recovery_state=(
                    LeaderRecoveryState(pc.leader_recovery_state) if pc.HasField("leader_recovery_state") else None
                ),
                reason=pc.reason,
                replicas=_replica_list(pc, "replicas"),
                removing_replicas=_replica_list(pc, "removing_replicas"),
                adding_replicas=_replica_list(pc, "adding_replicas"),
                elr=_replica_list(pc, "eligible_leader_replicas"),
                last_known_elr=_replica_list(pc, "last_known_elr"),
            )
        case "topic_config":
            tc = message.topic_config
            return TopicConfig(topic_name=tc.topic_name, name=tc.name, value=tc.value if tc.HasField("value") else None)
        case "config":
            c = message.config
            return ConfigRecord(
                ConfigResourceType(c.resource_type), c.resource_name, c.name, c.value if c.HasField("value") else None
            )
        case "remove_topic":
            return RemoveTopic(topic_id=_uuid_of(message.remove_topic.topic_id))
    return None


def encode_record(record: Record) -> bytes:
    return to_proto(record).SerializeToString()


def decode_record(data: bytes) -> Record:
    message = metadata_pb2.MetadataRecord()
    try:
        message.ParseFromString(data)
    except Exception as error:  # protobuf raises its own DecodeError; callers see one type
        raise RecordDecodeError(f"undecodable metadata record: {error}") from error
    try:
        return from_proto(message)
    except ValueError as error:  # an enum value this version does not know
        if isinstance(error, RecordDecodeError):
            raise
        raise RecordDecodeError(str(error)) from error
