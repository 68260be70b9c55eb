"""`minikafka consume --group G`: a group member that reads the partitions the group assigns it, from the group's
committed offsets (else from the start or the end), commits what it has written as it goes, and rejoins when the
group rebalances. With --json each record line also carries `group` and `ts` (docs/events.md)."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import NamedTuple

from minikafka.client.consumer import EARLIEST, LATEST, Consumer, ConsumerRecord
from minikafka.client.consumer_protocol_member import ConsumerProtocolMember
from minikafka.client.group_member import REJOIN_ERRORS, GroupMember, GroupTimeouts, TopicPartition
from minikafka.client.kafka_wire_client import KafkaWireClient
from minikafka.common.clock import client_monotonic_s
from minikafka.common.errors import ErrorCode, KafkaError

AUTO_COMMIT_INTERVAL_S = 1.0  # auto.commit.interval.ms is 5000 in Kafka; shorter here so a killed member redoes less


class Heartbeats(NamedTuple):
    next_heartbeat: float  # when the consume loop heartbeats next (without a background heartbeat)
    rejoined: bool


class BackgroundHeartbeat:
    """Heartbeats a joined member every heartbeat interval from its own task, so a slow poll, offset lookup or
    write does not outlast the session timeout; the consume loop rejoins once a heartbeat asked for it. `heard` is
    told when each heartbeat the coordinator accepted was sent."""

    def __init__(self, member: GroupMember, heard: Callable[[float], None] = lambda sent: None) -> None:
        self.member = member
        self.heard = heard
        self.rejoin = asyncio.Event()
        self.beats = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.member.timeouts.heartbeat_interval_ms / 1000)
            if self.rejoin.is_set() or not self.member.in_group():
                continue  # the consume loop is rejoining: its join heartbeats
            self.beats += 1
            sent = client_monotonic_s()
            error = await self.member.heartbeat()
            if error == ErrorCode.NONE:
                self.heard(sent)
            elif error in REJOIN_ERRORS:
                self.rejoin.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class GroupConsumer:
    def __init__(
        self,
        consumer: Consumer,
        member: GroupMember,
        from_beginning: bool,
        as_json: bool,
        background_heartbeat: bool = False,
    ) -> None:
        """`background_heartbeat`: heartbeat from a task of its own rather than between polls."""
        self.consumer = consumer
        self.member = member
        self.background = BackgroundHeartbeat(member, self.heard) if background_heartbeat else None
        # When the coordinator last accepted this member (a join, heartbeat or commit): after a session timeout
        # without one, it may have given the partitions to others, so polled records are not this member's to hand on.
        self.last_heard_s = client_monotonic_s()
        self.reset = EARLIEST if from_beginning else LATEST  # auto.offset.reset for partitions never committed
        self.as_json = as_json
        self.written: dict[TopicPartition, int] = {}  # next offset after the last record written out
        self.committed: dict[TopicPartition, int] = {}

    async def rejoin(self) -> None:
        """Commit what was written, then join and start each assigned partition at its committed offset."""
        await self.commit()
        self.consumer.positions.clear()
        self.consumer.fetch_states.clear()
        assignment = await self.member.join()
        # From the coordinator's start of the session, not the end of the offset lookups after it: those may hang
        # on a leader, and a KIP-848 answer may come seconds after the session started, once its write committed.
        self.last_heard_s = self.member.session_start_s()
        committed = await self.member.committed(assignment)
        for topic, partition in assignment:
            start = committed.get((topic, partition), self.reset)
            await self.consumer.assign(topic, [partition], start)
        self.written = {tp: offset for tp, offset in committed.items() if tp in assignment}
        self.committed = dict(self.written)
        era = "member epoch" if isinstance(self.member, ConsumerProtocolMember) else "generation"
        self.announce(f"group {self.member.group}: {era} {self.member.generation}, assigned {assignment}")

    def announce(self, text: str) -> None:
        """A new generation or epoch and its assignment, for the person running the command."""
        print(text, file=sys.stderr)

    def heard(self, sent: float) -> None:
        """The coordinator accepted a request of this member sent at `sent` (it heard it then or later)."""
        self.last_heard_s = max(self.last_heard_s, sent)

    def session_lapsed(self) -> bool:
        """No word from the coordinator for a session timeout: the group may have moved on without this member."""
        return (client_monotonic_s() - self.last_heard_s) * 1000 > self.member.timeouts.session_timeout_ms

    async def commit(self) -> None:
        pending = {tp: o for tp, o in self.written.items() if self.committed.get(tp) != o}
        sent = client_monotonic_s()
        if pending and await self.member.commit(pending) == ErrorCode.NONE:
            self.committed.update(pending)
            self.heard(sent)

    def write(self, records: list[ConsumerRecord], limit: int | None, consumed: int) -> int:
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        for record in records:
            if limit is not None and consumed >= limit:
                break
            if self.as_json:
                line = {**record.to_json(), "group": self.member.group, "ts": now}
                sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
            else:
                sys.stdout.write((record.value or b"").decode("utf-8", "replace") + "\n")
            self.written[(record.topic, record.partition)] = record.offset + 1
            consumed += 1
        sys.stdout.flush()
        return consumed

    async def run(self, timeout_ms: int, limit: int | None) -> int:
        """Consume until `limit` records, or until `timeout_ms` passed without a record once caught up."""
        if self.background is None:
            return await self._consume(timeout_ms, limit)
        self.background.start()
        try:
            return await self._consume(timeout_ms, limit)
        finally:
            await self.background.stop()

    async def _heartbeat_due(self, now: float, next_heartbeat: float) -> Heartbeats:
        """Rejoin if the background heartbeat asked for it, or heartbeat here when due."""
        if self.background is not None:
            if not self.background.rejoin.is_set():
                return Heartbeats(next_heartbeat, rejoined=False)
            await self.rejoin()
            self.background.rejoin.clear()
            return Heartbeats(next_heartbeat, rejoined=True)
        if now < next_heartbeat:
            return Heartbeats(next_heartbeat, rejoined=False)
        next_heartbeat = now + self.member.timeouts.heartbeat_interval_ms / 1000
        sent = client_monotonic_s()
        error = await self.member.heartbeat()
        if error == ErrorCode.NONE:
            self.heard(sent)
        elif error in REJOIN_ERRORS:
            await self.rejoin()
            return Heartbeats(next_heartbeat, rejoined=True)
        return Heartbeats(next_heartbeat, rejoined=False)

    async def _consume(self, timeout_ms: int, limit: int | None) -> int:
        await self.rejoin()
        consumed, last_record = 0, client_monotonic_s()
        next_heartbeat = next_commit = client_monotonic_s()
        while limit is None or consumed < limit:
            try:
                records = await self.consumer.poll()
            except KafkaError:
                records = []  # leaders move during faults: the next poll refreshes the metadata
            if self.session_lapsed():
                # Kafka's coordinator fences a member it has not heard from for a session timeout: join again, and
                # read from what the group committed meanwhile, instead of handing on what this poll returned.
                await self.rejoin()
                continue
            consumed = self.write(records, limit, consumed)
            now = client_monotonic_s()
            last_record = now if records else last_record
            if now >= next_commit:
                await self.commit()
                next_commit = now + AUTO_COMMIT_INTERVAL_S
            heartbeats = await self._heartbeat_due(now, next_heartbeat)
            next_heartbeat = heartbeats.next_heartbeat
            if heartbeats.rejoined:
                last_record = client_monotonic_s()
            if (now - last_record) * 1000 >= timeout_ms and self.consumer.caught_up():
                break
        await self.commit()
        return consumed


async def run_group_consume(
    bootstrap: list[str],
    kafka_bootstrap: list[str],
    group: str,
    topic: str,
    options: object,
    consumer: Consumer,
    protocol: str = "classic",
) -> int:
    """`protocol`: Kafka's group.protocol, classic or consumer (KIP-848)."""
    client = KafkaWireClient(kafka_bootstrap)

    async def partition_counts(topics: list[str]) -> dict[str, int]:
        return {t: len(await consumer.metadata.require_topic(t)) for t in topics}

    member: GroupMember
    if protocol == "consumer":
        member = ConsumerProtocolMember(client, group, [topic], GroupTimeouts())
    else:
        member = GroupMember(client, group, [topic], partition_counts, GroupTimeouts())
    runner = GroupConsumer(
        consumer,
        member,
        options.from_beginning,  # type: ignore[attr-defined]
        options.as_json,  # type: ignore[attr-defined]
        background_heartbeat=protocol == "consumer",
    )
    try:
        consumed = await runner.run(options.timeout_ms, options.max_messages)  # type: ignore[attr-defined]
        print(f"consumed {consumed} records", file=sys.stderr)
        return consumed
    finally:
        await member.leave()
        await client.close()
        await consumer.close()
