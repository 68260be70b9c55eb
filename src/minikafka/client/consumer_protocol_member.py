"""A member of a KIP-848 consumer group (`group.protocol=consumer`): it joins and heartbeats with
ConsumerGroupHeartbeat, the coordinator assigns. The same face as the classic GroupMember for `consume --group`:
a heartbeat that brings a different assignment answers REBALANCE_IN_PROGRESS, the consumer commits what it has
written and `join` hands it the new assignment, which the next heartbeat reports as owned (a revocation is
acknowledged only after the commit). Offsets are committed with the member epoch (OffsetCommit v9)."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from typing import Any

from minikafka.client.consumer_groups_command import RETRIABLE_COORDINATOR_ERRORS
from minikafka.client.group_member import GroupMember, GroupTimeouts, TopicPartition
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.clock import client_monotonic_s
from minikafka.common.errors import ErrorCode, KafkaError

CONSUMER_GROUP_HEARTBEAT, METADATA, OFFSET_COMMIT = 68, 3, 8
JOIN_EPOCH, LEAVE_EPOCH = 0, -1
REJOIN_FRESH = (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID)


class ConsumerProtocolMember(GroupMember):
    OFFSET_COMMIT_VERSION = 9  # the classic member's commit, at the member epoch (`generation` answers it)

    def __init__(
        self, client: KafkaWireClient, group: str, topics: list[str], timeouts: GroupTimeouts | None = None
    ) -> None:
        super().__init__(client, group, topics, _no_counts, timeouts)
        self.member_epoch = JOIN_EPOCH
        self.owned: list[TopicPartition] = []
        self.pending: list[TopicPartition] | None = None  # an assignment heard but not yet taken by the consumer
        self.topic_ids: dict[str, uuid.UUID] = {}
        # The background heartbeat and the consume loop's join both heartbeat: one at a time, so each answer
        # updates the epoch and assignment the next request reports.
        self._beating = asyncio.Lock()
        self.accepted_sent_s = client_monotonic_s()  # when the last heartbeat the coordinator accepted was sent

    def session_start_s(self) -> float:
        """A KIP-848 coordinator restarts the session as it takes a heartbeat, before the heartbeat's records are
        committed and it answers: the send time of the last accepted one bounds it from below."""
        return self.accepted_sent_s

    @property
    def generation(self) -> int:
        """The member epoch stands for the classic generation in what the consumer prints."""
        return self.member_epoch

    @generation.setter
    def generation(self, value: int) -> None:
        pass  # GroupMember's constructor sets it; the member epoch is the coordinator's

    async def join(self) -> list[TopicPartition]:
        """The assignment to consume now: the one a heartbeat brought, or a new membership's first one."""
        while True:
            if self.pending is not None:
                self.owned, self.pending = self.pending, None
                return self.owned
            error = await self._beat()
            if error == ErrorCode.NONE and self.member_epoch > JOIN_EPOCH:
                if self.pending is None:
                    return self.owned
                continue
            if error not in (ErrorCode.NONE, *REJOIN_FRESH, *RETRIABLE_COORDINATOR_ERRORS, ErrorCode.NETWORK_EXCEPTION):
                raise KafkaError(error, f"ConsumerGroupHeartbeat {self.group}")
            await asyncio.sleep(self.timeouts.retry_backoff_ms / 1000)

    async def heartbeat(self) -> ErrorCode:
        """NONE; REBALANCE_IN_PROGRESS when the assignment changed (or the member must join afresh); or a
        coordinator error to retry."""
        error = await self._beat()
        if error == ErrorCode.NONE:
            return ErrorCode.REBALANCE_IN_PROGRESS if self.pending is not None else ErrorCode.NONE
        return ErrorCode.REBALANCE_IN_PROGRESS if error in REJOIN_FRESH else error

    def in_group(self) -> bool:
        return bool(self.member_id) and self.member_epoch > JOIN_EPOCH

    async def _beat(self) -> ErrorCode:
        async with self._beating:
            return await self._beat_once()

    async def _beat_once(self) -> ErrorCode:
        cls = request_class(CONSUMER_GROUP_HEARTBEAT, 0)
        if not self.topic_ids or any(t not in self.topic_ids for t, _ in self.owned):
            await self._refresh_topic_ids()
        entry = nested(cls, "TopicPartitions")
        owned = tuple(
            entry(topic_id=self.topic_ids[topic], partitions=tuple(p for t, p in self.owned if t == topic))
            for topic in sorted({t for t, _ in self.owned})
        )
        # Every field each time: the coordinator then answers with the whole assignment.
        body = cls(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=datetime.timedelta(milliseconds=self.timeouts.rebalance_timeout_ms),
            subscribed_topic_names=tuple(self.topics),
            server_assignor=None,
            topic_partitions=owned,
        )
        sent = client_monotonic_s()
        try:
            response = await self._send(body)
        except KafkaError as failed:
            return failed.code
        error = await self._heard(response)
        if error == ErrorCode.NONE:
            self.accepted_sent_s = max(self.accepted_sent_s, sent)
        return error

    async def _heard(self, response: Any) -> ErrorCode:
        error = ErrorCode.of(response.error_code)
        if error in REJOIN_FRESH:
            # Its partitions are no longer its own: give them up and join again as a new member.
            self.member_id, self.member_epoch, self.owned, self.pending = "", JOIN_EPOCH, [], None
            return error
        if self._lost_coordinator(error) or error != ErrorCode.NONE:
            return error
        self.member_id, self.member_epoch = response.member_id or self.member_id, response.member_epoch
        if response.assignment is not None:
            names = {topic_id: name for name, topic_id in self.topic_ids.items()}
            if any(t.topic_id not in names for t in response.assignment.topic_partitions):
                await self._refresh_topic_ids()
                names = {topic_id: name for name, topic_id in self.topic_ids.items()}
            assigned = sorted(
                (names[t.topic_id], int(p))
                for t in response.assignment.topic_partitions
                if t.topic_id in names
                for p in t.partitions
            )
            if assigned != sorted(self.owned):
                self.pending = assigned
        return ErrorCode.NONE

    async def _refresh_topic_ids(self) -> None:
        cls = request_class(METADATA, 12)
        try:
            response = await self.client.any_broker(
                cls(topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False)
            )
        except KafkaError:
            return
        self.topic_ids = {t.name: t.topic_id for t in response.topics if t.name}

    async def leave(self) -> None:
        if not self.member_id or self.coordinator is None:
            return
        cls = request_class(CONSUMER_GROUP_HEARTBEAT, 0)
        body = cls(
            group_id=self.group,
            member_id=self.member_id,
            member_epoch=LEAVE_EPOCH,
            instance_id=None,
            rack_id=None,
            rebalance_timeout=datetime.timedelta(milliseconds=-1),
            subscribed_topic_names=None,
            server_assignor=None,
            topic_partitions=None,
        )
        try:
            await self._send(body)
        except KafkaError:
            pass  # the session timeout removes it anyway


async def _no_counts(topics: list[str]) -> dict[str, int]:
    return {}  # the coordinator assigns: the member needs no partition counts
