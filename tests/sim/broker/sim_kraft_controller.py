"""The production controller core behind the broker simulation: the same interface as `ControllerModel`, but every
decision (registration and the clean/unclean shutdown rule, fencing, elections, AlterPartition, the ELR) is made by
`kraft_controller.control` on a metadata image; its records 'commit' at once, at the next offsets."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

from sim_controller_model import MetadataSnapshot

from minikafka.broker.replica.partition import AlterPartitionProposal, AlterPartitionResult, PartitionMetadata
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control import cluster_control, replication_control
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_state_machine import feature_records
from minikafka.kraft_controller.control.heartbeat_manager import HeartbeatManager
from minikafka.kraft_controller.control.requests import (
    AlterPartitionPartition,
    AlterPartitionRequest,
    AlterPartitionTopic,
    BrokerRegistrationRequest,
    BrokerState,
    CreatableTopic,
    CreateTopicsRequest,
    ReplicaAssignment,
)
from minikafka.kraft_controller.metadata.image import MetadataImage, PartitionRegistration
from minikafka.kraft_controller.metadata.records import BrokerStatus, Record

TOPIC = "sim"


@dataclass
class RegistrationView:
    broker_epoch: int
    fenced: bool


@dataclass
class KraftController:
    replicas: tuple[int, ...]
    min_insync_replicas: int = 2  # the controller's static min.insync.replicas, and the topic's unless topic_configs
    topic_configs: dict[str, str] | None = None  # the topic's own configs; None: {min.insync.replicas: the above}
    eligible_leader_replicas_version: int = 1
    broker_epoch_check: bool = True
    image: MetadataImage = field(default_factory=MetadataImage)
    stale_commits: list[tuple[int, int, int]] = field(default_factory=list)
    incarnations: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.config = ControlConfig(
            alter_partition_broker_epoch_check=self.broker_epoch_check,
            eligible_leader_replicas_version=self.eligible_leader_replicas_version,
            min_insync_replicas=self.min_insync_replicas,
        )
        self._commit(feature_records(self.image, self.config))
        for broker in self.replicas:
            self.register(broker)
            self.unfence(broker)
        assignment = (ReplicaAssignment(0, self.replicas),)
        configs = self.topic_configs
        if configs is None:
            configs = {"min.insync.replicas": str(self.min_insync_replicas)}
        request = CreateTopicsRequest((CreatableTopic(TOPIC, -1, -1, assignment, configs),))
        result = replication_control.create_topics(self.image, request, self.config, random.Random(0))
        self._commit(result.records)
        self.topic_id: uuid.UUID = self.image.topics_by_name[TOPIC].topic_id

    def _commit(self, records: tuple[Record, ...] | list[Record]) -> None:
        for record in records:
            self.image = self.image.replay(record, self.image.offset + 1)

    # ---- what the simulation reads ----

    @property
    def partition(self) -> PartitionRegistration:
        partition = self.image.partition(self.topic_id, 0)
        assert partition is not None
        return partition

    @property
    def isr(self) -> list[int]:
        return list(self.partition.isr)

    @property
    def elr(self) -> list[int]:
        return list(self.partition.elr)

    @property
    def leader(self) -> int:
        return self.partition.leader

    @property
    def leader_epoch(self) -> int:
        return self.partition.leader_epoch

    @property
    def elr_enabled(self) -> bool:
        return self.image.elr_enabled

    @property
    def brokers(self) -> dict[int, RegistrationView]:
        return {
            b: RegistrationView(r.broker_epoch, r.status is not BrokerStatus.UNFENCED)
            for b, r in self.image.brokers.items()
        }

    def snapshot(self) -> MetadataSnapshot:
        p = self.partition
        epochs = {b: r.broker_epoch for b, r in self.image.brokers.items() if r.status is BrokerStatus.UNFENCED}
        return MetadataSnapshot(
            PartitionMetadata(p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch), epochs, self.image
        )

    # ---- broker lifecycle ----

    def register(self, broker: int, previous_broker_epoch: int = -1) -> int:
        """A new incarnation. No live session blocks it: the simulation fences by its own session clock."""
        self.incarnations[broker] = self.incarnations.get(broker, 0) + 1
        request = BrokerRegistrationRequest(
            broker, f"b{broker}-{self.incarnations[broker]}", previous_broker_epoch=previous_broker_epoch
        )
        result = cluster_control.register_broker(
            self.image, HeartbeatManager(1), request, 0, self.config.topic_defaults
        )
        self._commit(result.records)
        return self.image.brokers[broker].broker_epoch

    def fence(self, broker: int) -> None:
        self._commit(
            replication_control.fence_broker(self.image, broker, "session_timeout", self.config.topic_defaults)
        )

    def unfence(self, broker: int) -> None:
        self._commit(replication_control.unfence_broker(self.image, broker, "caught_up", self.config.topic_defaults))

    # ---- AlterPartition v3 ----

    def alter_partition(
        self, requester: int, requester_epoch: int, proposal: AlterPartitionProposal
    ) -> AlterPartitionResult:
        states = tuple(BrokerState(s.broker_id, s.broker_epoch) for s in proposal.new_isr_with_epochs)
        entry = AlterPartitionPartition(0, proposal.leader_epoch, states, proposal.partition_epoch)
        request = AlterPartitionRequest(requester, requester_epoch, (AlterPartitionTopic(self.topic_id, (entry,)),))
        try:
            result = replication_control.alter_partition(self.image, request, self.config)
        except KafkaError as error:
            return AlterPartitionResult(error.code)
        self._commit(result.records)
        answer = result.response.topics[0].partitions[0]
        if answer.error_code != ErrorCode.NONE:
            return AlterPartitionResult(answer.error_code)
        if result.records:
            for state in proposal.new_isr_with_epochs:
                current = self.image.brokers[state.broker_id].broker_epoch
                if state.broker_epoch not in (-1, current):
                    self.stale_commits.append((state.broker_id, state.broker_epoch, current))
        return AlterPartitionResult(ErrorCode.NONE, answer.isr, answer.leader_epoch, answer.partition_epoch)
