"""A member of a classic consumer group, speaking Kafka's group protocol to the coordinator through the brokers'
Kafka listeners: join (the leader assigns with Kafka's range assignor), sync, heartbeat, commit, fetch committed
offsets, leave. minikafka's consumer fetches its records over its own protocol; only membership goes this way."""

from __future__ import annotations

import asyncio
import datetime
import struct
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kio.serial import entity_reader

from minikafka.client.consumer_groups_command import (
    RETRIABLE_COORDINATOR_ERRORS,
    decode_assignment,
    find_coordinator,
)
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.clock import client_monotonic_s
from minikafka.common.errors import ErrorCode, KafkaError

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 8, 9, 11, 12, 13, 14
PROTOCOL_TYPE, RANGE = "consumer", "range"
REJOIN_ERRORS = (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID)

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class GroupTimeouts:
    """Shorter than Kafka's consumer defaults (45 s session, 300 s rebalance): a killed member stalls its group's
    next rebalance for up to a session timeout, and this consumer runs in short tests and chaos runs."""

    session_timeout_ms: int = 6000
    rebalance_timeout_ms: int = 15000
    heartbeat_interval_ms: int = 1000
    retry_backoff_ms: int = 100


def _string(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def encode_subscription(topics: list[str]) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, null user data."""
    return struct.pack(">hi", 0, len(topics)) + b"".join(_string(t) for t in topics) + struct.pack(">i", -1)


def encode_assignment(partitions: list[TopicPartition]) -> bytes:
    """ConsumerProtocolAssignment v0: version, [topic, [partition]], null user data."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    out = struct.pack(">hi", 0, len(by_topic))
    for topic, indexes in sorted(by_topic.items()):
        out += _string(topic) + struct.pack(f">i{len(indexes)}i", len(indexes), *sorted(indexes))
    return out + struct.pack(">i", -1)


def decode_subscription(data: bytes) -> list[str]:
    version = min(struct.unpack_from(">h", data)[0], 3)
    module = __import__(f"kio.schema.consumer_protocol_subscription.v{version}.data", fromlist=["x"])
    subscription, _ = entity_reader(module.ConsumerProtocolSubscription)(data, 2)
    return list(subscription.topics)


def range_assign(subscriptions: dict[str, list[str]], partitions: dict[str, int]) -> dict[str, list[TopicPartition]]:
    """Kafka's RangeAssignor: per topic, its partitions in order split over its subscribers sorted by member id,
    the first (partitions % members) getting one more."""
    assignment: dict[str, list[TopicPartition]] = {member: [] for member in subscriptions}
    for topic, count in sorted(partitions.items()):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        per_member, extra = divmod(count, len(members))
        start = 0
        for index, member in enumerate(members):
            size = per_member + (1 if index < extra else 0)
            assignment[member] += [(topic, p) for p in range(start, start + size)]
            start += size
    return assignment


class GroupMember:
    # The OffsetCommit version a member sends: a consumer-protocol member sends v9, where the generation is its epoch.
    OFFSET_COMMIT_VERSION = 7

    def __init__(
        self,
        client: KafkaWireClient,
        group: str,
        topics: list[str],
        partition_counts: Callable[[list[str]], Awaitable[dict[str, int]]],
        timeouts: GroupTimeouts | None = None,
    ) -> None:
        self.client = client
        self.group = group
        self.topics = topics
        self.partition_counts = partition_counts
        self.timeouts = timeouts or GroupTimeouts()
        self.member_id = ""
        self.generation = -1
        self.coordinator: str | None = None

    def session_start_s(self) -> float:
        """When the coordinator started this member's session for the join just answered: a classic coordinator
        starts it as it completes the join and answers, so about now (late by the answer's trip)."""
        return client_monotonic_s()

    async def _send(self, body: object) -> Any:  # kio's response class is chosen at run time
        """Send to the coordinator; a connection that fails forgets it, so the next request looks it up again."""
        if self.coordinator is None:
            _, self.coordinator = await find_coordinator(
                self.client, self.group, self.timeouts.rebalance_timeout_ms / 1000
            )
        try:
            return await self.client.connection(self.coordinator).send(body)
        except KafkaError:
            self.coordinator = None
            raise

    def _lost_coordinator(self, error: ErrorCode) -> bool:
        if error in RETRIABLE_COORDINATOR_ERRORS:
            self.coordinator = None
            return True
        return False

    async def join(self) -> list[TopicPartition]:
        """Join (or rejoin) the group and return this member's assignment of the new generation."""
        while True:
            try:
                joined = await self._join_once()
                assignment = await self._sync(joined) if joined is not None else None
            except KafkaError as error:
                if not (error.code.retriable or error.code == ErrorCode.BROKER_NOT_AVAILABLE):
                    raise
                assignment = None  # the coordinator's broker is gone or moving: look it up again
            if assignment is not None:
                return assignment
            await asyncio.sleep(self.timeouts.retry_backoff_ms / 1000)

    async def _join_once(self) -> object | None:
        cls = request_class(JOIN_GROUP, 5)
        protocol = nested(cls, "JoinGroupRequestProtocol")(name=RANGE, metadata=encode_subscription(self.topics))
        response = await self._send(
            cls(
                group_id=self.group,
                session_timeout=_ms(self.timeouts.session_timeout_ms),
                rebalance_timeout=_ms(self.timeouts.rebalance_timeout_ms),
                member_id=self.member_id,
                group_instance_id=None,
                protocol_type=PROTOCOL_TYPE,
                protocols=(protocol,),
            )
        )
        error = ErrorCode.of(response.error_code)
        if error == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            return None
        if error == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            return None
        if self._lost_coordinator(error) or error == ErrorCode.REBALANCE_IN_PROGRESS:
            return None
        if error != ErrorCode.NONE:
            raise KafkaError(error, f"JoinGroup {self.group}")
        self.member_id, self.generation = response.member_id, response.generation_id
        return response

    async def _sync(self, joined: object) -> list[TopicPartition] | None:
        assignments: tuple[object, ...] = ()
        cls = request_class(SYNC_GROUP, 3)
        if joined.leader == self.member_id:  # type: ignore[attr-defined]
            subscriptions = {m.member_id: decode_subscription(bytes(m.metadata)) for m in joined.members}  # type: ignore[attr-defined]
            counts = await self.partition_counts(sorted({t for topics in subscriptions.values() for t in topics}))
            entry = nested(cls, "SyncGroupRequestAssignment")
            assignments = tuple(
                entry(member_id=member, assignment=encode_assignment(partitions))
                for member, partitions in range_assign(subscriptions, counts).items()
            )
        response = await self._send(
            cls(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=None,
                assignments=assignments,
            )
        )
        error = ErrorCode.of(response.error_code)
        if error != ErrorCode.NONE:
            if error == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            if self._lost_coordinator(error) or error in REJOIN_ERRORS:
                return None
            raise KafkaError(error, f"SyncGroup {self.group}")
        return [tp for tp in decode_assignment(bytes(response.assignment)) if tp[0] in self.topics]

    def in_group(self) -> bool:
        """Joined: a heartbeat now is a member's, not a join."""
        return bool(self.member_id) and self.generation >= 0

    async def heartbeat(self) -> ErrorCode:
        """NONE, or an error that asks for a rejoin (REBALANCE_IN_PROGRESS, ...) or a coordinator lookup."""
        cls = request_class(HEARTBEAT, 3)
        try:
            response = await self._send(
                cls(
                    group_id=self.group, generation_id=self.generation, member_id=self.member_id, group_instance_id=None
                )
            )
        except KafkaError as failed:
            return failed.code
        error = ErrorCode.of(response.error_code)
        self._lost_coordinator(error)
        return error

    async def commit(self, offsets: dict[TopicPartition, int]) -> ErrorCode:
        """Commit the next offsets to read; the first error any partition got (NONE when all were stored)."""
        if not offsets:
            return ErrorCode.NONE
        cls = request_class(OFFSET_COMMIT, self.OFFSET_COMMIT_VERSION)
        topics = committed_topics(cls, "OffsetCommitRequest", offsets)
        try:
            response = await self._send(
                cls(
                    group_id=self.group,
                    generation_id_or_member_epoch=self.generation,
                    member_id=self.member_id,
                    group_instance_id=None,
                    topics=topics,
                )
            )
        except KafkaError as failed:
            return failed.code
        errors = [ErrorCode.of(p.error_code) for t in response.topics for p in t.partitions]
        error = next((e for e in errors if e != ErrorCode.NONE), ErrorCode.NONE)
        self._lost_coordinator(error)
        return error

    async def committed(
        self, partitions: list[TopicPartition], require_stable: bool = False
    ) -> dict[TopicPartition, int]:
        """The group's committed offsets of `partitions` (those without one are left out). `require_stable` (what
        Kafka's read_committed consumer asks, KIP-447): a partition whose transactional commit awaits its marker
        answers UNSTABLE_OFFSET_COMMIT, and is asked again until the transaction ended."""
        cls = request_class(OFFSET_FETCH, 7)
        topic_cls = nested(cls, "OffsetFetchRequestTopic")
        topics = tuple(
            topic_cls(name=topic, partition_indexes=tuple(p for t, p in partitions if t == topic))
            for topic in sorted({t for t, _ in partitions})
        )
        while True:
            try:
                response = await self._send(cls(group_id=self.group, topics=topics, require_stable=require_stable))
                error = ErrorCode.of(response.error_code)
            except KafkaError as failed:
                error = failed.code
            if error == ErrorCode.NONE and _unstable(response):
                error = ErrorCode.UNSTABLE_OFFSET_COMMIT
            elif not (self._lost_coordinator(error) or error == ErrorCode.NETWORK_EXCEPTION):
                break
            await asyncio.sleep(self.timeouts.retry_backoff_ms / 1000)
        if error != ErrorCode.NONE:
            raise KafkaError(error, f"OffsetFetch {self.group}")
        return {
            (t.name, p.partition_index): p.committed_offset
            for t in response.topics
            for p in t.partitions
            if p.committed_offset >= 0
        }

    async def leave(self) -> None:
        if not self.member_id or self.coordinator is None:
            return
        cls = request_class(LEAVE_GROUP, 3)
        identity = nested(cls, "MemberIdentity")(member_id=self.member_id, group_instance_id=None)
        try:
            await self._send(cls(group_id=self.group, members=(identity,)))
        except KafkaError:
            pass  # the session timeout removes it anyway


def committed_topics(cls: Any, prefix: str, offsets: Mapping[tuple[str, int], int]) -> tuple[Any, ...]:
    """The topics of an OffsetCommit or TxnOffsetCommit request (`prefix`: its entities' name prefix) committing
    `offsets`, (topic, partition) -> the next offset to read, in topic and partition order."""
    topic_cls, partition_cls = nested(cls, f"{prefix}Topic"), nested(cls, f"{prefix}Partition")
    return tuple(
        topic_cls(
            name=topic,
            partitions=tuple(
                partition_cls(partition_index=p, committed_offset=o, committed_leader_epoch=-1, committed_metadata="")
                for (t, p), o in sorted(offsets.items())
                if t == topic
            ),
        )
        for topic in sorted({t for t, _ in offsets})
    )


def _unstable(response: Any) -> bool:
    return any(
        ErrorCode.of(p.error_code) == ErrorCode.UNSTABLE_OFFSET_COMMIT for t in response.topics for p in t.partitions
    )


def _ms(milliseconds: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=milliseconds)
