"""Controller requests and responses as frozen dataclasses mirroring Kafka's fields.

The gRPC servicer converts these to and from `minikafka.pb.controller_pb2`; per-partition errors are ErrorCode
values, whole-request errors are raised as `common.errors.KafkaError`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum

from minikafka.common.acl import AclBinding
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.image import BrokerRegistration
from minikafka.kraft_controller.metadata.records import Endpoint, LeaderRecoveryState

# ---- BrokerRegistration ----


@dataclass(frozen=True)
class BrokerRegistrationRequest:
    broker_id: int
    incarnation_id: str
    listeners: tuple[Endpoint, ...] = ()
    rack: str = ""
    previous_broker_epoch: int = -1  # KAFKA-15586: the last incarnation's epoch if it stopped cleanly, else -1


@dataclass(frozen=True)
class BrokerRegistrationResponse:
    error_code: ErrorCode
    broker_epoch: int  # -1 until the RegisterBroker record commits: see ControllerResult.response_at


# ---- BrokerHeartbeat ----


@dataclass(frozen=True)
class BrokerHeartbeatRequest:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool = False
    want_shutdown: bool = False
    offline_log_dirs: tuple[str, ...] = ()  # its log dirs that failed: it serves none of their replicas


@dataclass(frozen=True)
class BrokerHeartbeatResponse:
    error_code: ErrorCode
    is_caught_up: bool
    is_fenced: bool
    should_shutdown: bool


# ---- AlterPartition v3 ----


@dataclass(frozen=True)
class BrokerState:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class AlterPartitionPartition:
    partition_index: int
    leader_epoch: int
    new_isr_with_epochs: tuple[BrokerState, ...]
    partition_epoch: int
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED


@dataclass(frozen=True)
class AlterPartitionTopic:
    topic_id: uuid.UUID
    partitions: tuple[AlterPartitionPartition, ...]


@dataclass(frozen=True)
class AlterPartitionRequest:
    broker_id: int
    broker_epoch: int
    topics: tuple[AlterPartitionTopic, ...]


@dataclass(frozen=True)
class AlterPartitionPartitionResult:
    partition_index: int
    error_code: ErrorCode
    leader_id: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    partition_epoch: int = -1


@dataclass(frozen=True)
class AlterPartitionTopicResult:
    topic_id: uuid.UUID
    partitions: tuple[AlterPartitionPartitionResult, ...]


@dataclass(frozen=True)
class AlterPartitionResponse:
    error_code: ErrorCode
    topics: tuple[AlterPartitionTopicResult, ...]


# ---- CreateTopics ----


@dataclass(frozen=True)
class ReplicaAssignment:
    partition_index: int
    broker_ids: tuple[int, ...]


@dataclass(frozen=True)
class CreatableTopic:
    name: str
    num_partitions: int = -1  # -1: num.partitions
    replication_factor: int = -1  # -1: default.replication.factor
    assignments: tuple[ReplicaAssignment, ...] = ()
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CreateTopicsRequest:
    topics: tuple[CreatableTopic, ...]
    validate_only: bool = False


@dataclass(frozen=True)
class CreatableTopicResult:
    name: str
    topic_id: uuid.UUID | None
    error_code: ErrorCode
    error_message: str = ""
    num_partitions: int = -1
    replication_factor: int = -1


@dataclass(frozen=True)
class CreateTopicsResponse:
    topics: tuple[CreatableTopicResult, ...]


# ---- DeleteTopics ----


@dataclass(frozen=True)
class DeleteTopicsRequest:
    names: tuple[str, ...]


@dataclass(frozen=True)
class DeletableTopicResult:
    name: str
    topic_id: uuid.UUID | None
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True)
class DeleteTopicsResponse:
    topics: tuple[DeletableTopicResult, ...]


# ---- ElectLeaders ----


class ElectionType(IntEnum):
    """Kafka's ElectionType numbers."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class TopicPartitionRef:
    topic: str
    partition: int


@dataclass(frozen=True)
class ElectLeadersRequest:
    election_type: ElectionType
    partitions: tuple[TopicPartitionRef, ...] | None  # None: every partition (Kafka's null TopicPartitions)


@dataclass(frozen=True)
class PartitionElectionResult:
    topic: str
    partition: int
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True)
class ElectLeadersResponse:
    results: tuple[PartitionElectionResult, ...]


# ---- AlterPartitionReassignments / ListPartitionReassignments (KIP-455) ----


@dataclass(frozen=True)
class ReassignablePartition:
    topic: str
    partition: int
    replicas: tuple[int, ...] | None  # None: cancel the reassignment in progress


@dataclass(frozen=True)
class AlterPartitionReassignmentsRequest:
    partitions: tuple[ReassignablePartition, ...]


@dataclass(frozen=True)
class ReassignablePartitionResult:
    topic: str
    partition: int
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True)
class AlterPartitionReassignmentsResponse:
    results: tuple[ReassignablePartitionResult, ...]


@dataclass(frozen=True)
class OngoingPartitionReassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclass(frozen=True)
class ListPartitionReassignmentsResponse:
    reassignments: tuple[OngoingPartitionReassignment, ...]


# ---- DescribeCluster ----


@dataclass(frozen=True)
class DescribeClusterResponse:
    brokers: tuple[BrokerRegistration, ...]  # the committed registrations, as the image holds them
    metadata_offset: int


# ---- AllocateProducerIds (KIP-730) ----


@dataclass(frozen=True)
class AllocateProducerIdsRequest:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class AllocateProducerIdsResponse:
    error_code: ErrorCode
    producer_id_start: int = -1
    producer_id_len: int = 0


# ---- CreatePartitions (KIP-195) ----


@dataclass(frozen=True)
class CreatePartitionsTopic:
    name: str
    count: int  # the topic's new partition count
    assignments: tuple[tuple[int, ...], ...] | None = None  # replicas of each new partition; None: placed here


@dataclass(frozen=True)
class CreatePartitionsRequest:
    topics: tuple[CreatePartitionsTopic, ...]
    validate_only: bool = False


@dataclass(frozen=True)
class CreatePartitionsTopicResult:
    name: str
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True)
class CreatePartitionsResponse:
    results: tuple[CreatePartitionsTopicResult, ...]


# ---- AlterUserScramCredentials and DescribeUserScramCredentials (KIP-554) ----


@dataclass(frozen=True)
class ScramCredentialDeletion:
    name: str
    mechanism: int  # Kafka's ScramMechanism type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512


@dataclass(frozen=True)
class ScramCredentialUpsertion:
    """The client salts the password: only the salt, the iterations and the salted password travel."""

    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True)
class AlterUserScramCredentialsRequest:
    deletions: tuple[ScramCredentialDeletion, ...]
    upsertions: tuple[ScramCredentialUpsertion, ...]


@dataclass(frozen=True)
class UserResult:
    """One user's outcome (every alteration of a user succeeds or fails together)."""

    user: str
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True)
class AlterUserScramCredentialsResponse:
    results: tuple[UserResult, ...]


@dataclass(frozen=True)
class CredentialInfo:
    mechanism: int
    iterations: int


@dataclass(frozen=True)
class DescribedUser:
    user: str
    error_code: ErrorCode
    error_message: str = ""
    credential_infos: tuple[CredentialInfo, ...] = ()


@dataclass(frozen=True)
class DescribeUserScramCredentialsResponse:
    results: tuple[DescribedUser, ...]


# ---- CreateAcls, DescribeAcls and DeleteAcls (KIP-801: ACLs in the metadata log) ----


@dataclass(frozen=True)
class AclCreationResult:
    error_code: ErrorCode
    error_message: str = ""


@dataclass(frozen=True)
class CreateAclsResponse:
    results: tuple[AclCreationResult, ...]  # one per creation, in its order


@dataclass(frozen=True)
class DeleteAclsFilterResult:
    error_code: ErrorCode
    error_message: str = ""
    matching: tuple[AclBinding, ...] = ()  # what the filter deleted


@dataclass(frozen=True)
class DeleteAclsResponse:
    results: tuple[DeleteAclsFilterResult, ...]  # one per filter, in its order


@dataclass(frozen=True)
class DescribeAclsResponse:
    error_code: ErrorCode
    error_message: str = ""
    bindings: tuple[AclBinding, ...] = ()
