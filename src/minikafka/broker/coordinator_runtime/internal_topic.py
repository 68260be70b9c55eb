"""A coordinator's internal topic (__consumer_offsets, __transaction_state): which of its partitions a key lives
in, which broker coordinates the key (FindCoordinator), and creating the topic on its first use."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass

import structlog

from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2


@dataclass(frozen=True)
class CoordinatorLookup:
    error: ErrorCode
    node_id: int = -1
    message: str | None = None


@dataclass(frozen=True)
class InternalTopicSpec:
    name: str
    num_partitions: int
    replication_factor: int
    configs: Mapping[str, str]
    creation_failed_event: str  # logged with `error` and `error_message` when the controller refuses the topic


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[index : index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def partition_for(key: str, partitions: int) -> int:
    """Kafka's Utils.abs(key.hashCode) % partitions, for a group id and a transactional id alike."""
    code = java_string_hash(key)
    return (0 if code == -(1 << 31) else abs(code)) % partitions


class InternalTopic:
    def __init__(self, manager: ReplicaManager, controller: ControllerClient, spec: InternalTopicSpec) -> None:
        self.manager = manager
        self.controller = controller
        self.spec = spec
        self._creating: asyncio.Task[None] | None = None
        self._log = structlog.get_logger()

    @property
    def name(self) -> str:
        return self.spec.name

    def partitions(self) -> int | None:
        """How many partitions the topic has, None until the metadata shows it."""
        topic = self.manager.metadata.image.topics_by_name.get(self.spec.name)
        return len(topic.partitions) if topic is not None and topic.partitions else None

    def find_coordinator(self, key: str) -> CoordinatorLookup:
        """The broker leading the key's partition; the topic is created on first use."""
        partitions = self.partitions()
        if partitions is None:
            self._create_topic()
            return CoordinatorLookup(ErrorCode.COORDINATOR_NOT_AVAILABLE, message=f"{self.spec.name} is being created")
        topic = self.manager.metadata.image.topics_by_name[self.spec.name]
        registration = topic.partitions.get(partition_for(key, partitions))
        if registration is None or registration.leader < 0:
            return CoordinatorLookup(ErrorCode.COORDINATOR_NOT_AVAILABLE, message="the partition has no leader")
        return CoordinatorLookup(ErrorCode.NONE, registration.leader)

    def _create_topic(self) -> None:
        # One creation at a time: FindCoordinator requests arriving meanwhile do not ask the controller again.
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())

    async def _create(self) -> None:
        spec = self.spec
        topic = controller_pb2.CreateTopicsRequest.CreatableTopic(
            name=spec.name,
            num_partitions=spec.num_partitions,
            replication_factor=spec.replication_factor,
            configs=dict(spec.configs),
        )
        response = await self.controller.call("CreateTopics", controller_pb2.CreateTopicsRequest(topics=[topic]))
        for result in response.topics if response is not None else ():
            error = ErrorCode.of(result.error_code)
            if error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                self._log.warning(spec.creation_failed_event, error=error.name, error_message=result.error_message)
