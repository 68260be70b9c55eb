"""A manual-clock, in-memory commit harness around the pure controller: generate, 'commit' at the next offsets,
replay. No Raft and no I/O, so every scenario is deterministic and fast."""

from __future__ import annotations

import random
import uuid
from typing import TypeVar

from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.controller_state_machine import ControllerStateMachine, feature_records
from minikafka.kraft_controller.control.requests import (
    AlterPartitionPartition,
    AlterPartitionRequest,
    AlterPartitionTopic,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResponse,
    BrokerRegistrationRequest,
    BrokerState,
    CreatableTopic,
    CreateTopicsRequest,
    ReplicaAssignment,
)
from minikafka.kraft_controller.metadata.image import MetadataImage, PartitionRegistration
from minikafka.kraft_controller.metadata.records import Endpoint, FenceBroker, Record

R = TypeVar("R")


class Harness:
    def __init__(self, config: ControlConfig | None = None, seed: int = 0) -> None:
        self.config = config or ControlConfig(session_timeout_ms=1000)
        self.controller = ControllerStateMachine(self.config, random.Random(seed))
        self.next_offset = 0
        self.now_ms = 0
        self.committed: list[tuple[int, Record]] = []
        self.incarnations: dict[int, int] = {}
        # As a formatted cluster's bootstrap: the feature levels come first.
        self.commit(ControllerResult(tuple(feature_records(self.image, self.config)), None))

    @property
    def image(self) -> MetadataImage:
        return self.controller.image

    def commit(self, result: ControllerResult[R]) -> R:
        result = result.whole()
        base = self.next_offset
        for record in result.records:
            self.controller.replay(record, self.next_offset)
            self.committed.append((self.next_offset, record))
            self.next_offset += 1
        return result.response_at(base)

    def advance(self, ms: int) -> None:
        self.now_ms += ms

    def tick_once(self) -> tuple[Record, ...]:
        result = self.controller.tick(self.now_ms).whole()
        self.commit(result)
        return result.records

    def tick(self) -> tuple[Record, ...]:
        """Ticks until no stale broker is left (a tick fences one), at this time; every tick's records."""
        records = last = self.tick_once()
        while any(isinstance(r, FenceBroker) and r.reason == "session_timeout" for r in last):
            last = self.tick_once()
            records += last
        return records

    def register(self, broker_id: int, incarnation: str | None = None, previous_broker_epoch: int = -1) -> int:
        """`previous_broker_epoch`: the last incarnation's epoch after a clean shutdown; -1 after an unclean one."""
        if incarnation is None:
            self.incarnations[broker_id] = self.incarnations.get(broker_id, 0) + 1
            incarnation = f"b{broker_id}-i{self.incarnations[broker_id]}"
        request = BrokerRegistrationRequest(
            broker_id,
            incarnation,
            (Endpoint("PLAINTEXT", "127.0.0.1", 9000 + broker_id),),
            rack="",
            previous_broker_epoch=previous_broker_epoch,
        )
        return self.commit(self.controller.register_broker(request, self.now_ms)).broker_epoch

    def heartbeat(
        self, broker_id: int, epoch: int, metadata_offset: int | None = None, **flags: bool
    ) -> BrokerHeartbeatResponse:
        offset = self.next_offset - 1 if metadata_offset is None else metadata_offset
        request = BrokerHeartbeatRequest(broker_id, epoch, offset, **flags)
        return self.commit(self.controller.broker_heartbeat(request, self.now_ms))

    def start_broker(self, broker_id: int) -> int:
        epoch = self.register(broker_id)
        assert not self.heartbeat(broker_id, epoch).is_fenced
        return epoch

    def create_topic(
        self, name: str, partitions: int = -1, rf: int = -1, assignment: list[list[int]] | None = None, **configs: str
    ) -> uuid.UUID:
        assignments = tuple(ReplicaAssignment(i, tuple(r)) for i, r in enumerate(assignment or []))
        request = CreateTopicsRequest((CreatableTopic(name, partitions, rf, assignments, configs),))
        response = self.commit(self.controller.create_topics(request))
        result = response.topics[0]
        assert result.topic_id is not None, result
        return result.topic_id

    def partition(self, topic_id: uuid.UUID, index: int = 0) -> PartitionRegistration:
        partition = self.image.partition(topic_id, index)
        assert partition is not None
        return partition

    def epoch(self, broker_id: int) -> int:
        registration = self.image.broker(broker_id)
        assert registration is not None
        return registration.broker_epoch

    def alter_request(
        self,
        sender: int,
        topic_id: uuid.UUID,
        isr: list[tuple[int, int]],
        index: int = 0,
        leader_epoch: int | None = None,
        partition_epoch: int | None = None,
        sender_epoch: int | None = None,
    ) -> AlterPartitionRequest:
        current = self.image.partition(topic_id, index)
        partition = AlterPartitionPartition(
            partition_index=index,
            leader_epoch=leader_epoch if leader_epoch is not None else (current.leader_epoch if current else 0),
            new_isr_with_epochs=tuple(BrokerState(b, e) for b, e in isr),
            partition_epoch=(
                partition_epoch if partition_epoch is not None else (current.partition_epoch if current else 0)
            ),
        )
        return AlterPartitionRequest(
            sender,
            self.epoch(sender) if sender_epoch is None else sender_epoch,
            (AlterPartitionTopic(topic_id, (partition,)),),
        )
