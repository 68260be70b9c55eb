"""The group coordinator's shell: it runs the pure group core on each request and timer tick for the groups of the
__consumer_offsets partitions this broker leads, and carries out its effects (answers, acks=all appends through the
replica manager, events).

The coordinator runtime keeps those partitions' shards: loaded from the log when this broker becomes the leader
(requests for their groups get COORDINATOR_LOAD_IN_PROGRESS meanwhile, but a Heartbeat NONE), dropped when it stops
leading (NOT_COORDINATOR; held requests are answered so), reloaded on a new leader epoch."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from functools import partial

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.consumer_group import shell as consumer_groups
from minikafka.broker.consumer_group.classic_members import MixedStep
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest, HeartbeatResponse
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig
from minikafka.broker.consumer_group.model import TopicPartition as GroupPartition
from minikafka.broker.consumer_group.replica_racks import partition_racks
from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.coordinator_runtime.internal_topic import CoordinatorLookup, InternalTopicSpec, partition_for
from minikafka.broker.coordinator_runtime.interval import IntervalCheck
from minikafka.broker.coordinator_runtime.runtime import CoordinatorRuntime, RuntimeConfig
from minikafka.broker.group.effects import Answer, Append, DeleteResult, GroupEvent, GroupStep, Result
from minikafka.broker.group.membership import expire
from minikafka.broker.group.new_topics import NewTopics
from minikafka.broker.group.offset_expiry import ExpiryScope, consumer_group_topics, expire_offsets
from minikafka.broker.group.offsets import (
    CommitRequest,
    append_done,
    metadata_store_error,
    store_error,
    validate_offset_commit,
)
from minikafka.broker.group.offsets import (
    delete_group as deleted_group,
)
from minikafka.broker.group.records import (
    encode_key,
    encode_value,
    with_wall_state_timestamps,
)
from minikafka.broker.group.shard import OffsetsReplay, OffsetsShard
from minikafka.broker.group.state import (
    Clock,
    Group,
    GroupConfig,
    GroupState,
    OffsetAndMetadata,
    PendingOffsetExpiry,
    TopicPartitionKey,
)
from minikafka.broker.group.txn_offsets import awaiting_marker, complete, offsets_records
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import ReplicaManager, answered
from minikafka.common.clock import monotonic_ms, wall_ms
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch

OFFSETS_TOPIC = "__consumer_offsets"


@dataclass(frozen=True)
class CoordinatorConfig:
    group: GroupConfig
    num_partitions: int  # offsets.topic.num.partitions
    replication_factor: int  # offsets.topic.replication.factor
    commit_timeout_ms: int  # offsets.commit.timeout.ms
    consumer: ConsumerGroupConfig = ConsumerGroupConfig()
    protocols: tuple[str, ...] = ("classic", "consumer")  # group.coordinator.rebalance.protocols
    segment_bytes: int = 104857600  # offsets.topic.segment.bytes
    offsets_retention_ms: int = 10080 * 60000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms


def coordinator_config(config: BrokerConfig) -> CoordinatorConfig:
    group = GroupConfig(
        min_session_timeout_ms=config.group_min_session_timeout_ms,
        max_session_timeout_ms=config.group_max_session_timeout_ms,
        initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
        max_size=config.group_max_size,
        max_metadata_size=config.offset_metadata_max_bytes,
    )
    return CoordinatorConfig(
        group,
        config.offsets_topic_num_partitions,
        config.offsets_topic_replication_factor,
        config.offsets_commit_timeout_ms,
        ConsumerGroupConfig(
            session_timeout_ms=config.group_consumer_session_timeout_ms,
            heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
            max_size=config.group_consumer_max_size,
            assignors=config.consumer_assignors,
            migration_policy=config.group_consumer_migration_policy,
            classic_max_size=config.group_max_size,
        ),
        config.group_coordinator_rebalance_protocols,
        config.offsets_topic_segment_bytes,
        config.offsets_retention_minutes * 60000,
        config.offsets_retention_check_interval_ms,
    )


def runtime_config(config: CoordinatorConfig) -> RuntimeConfig:
    # Kafka's: compacted, each group's and each offset's latest record kept (retention would delete live commits);
    # an expired offset or a deleted group leaves a tombstone.
    configs = {"cleanup.policy": "compact", "segment.bytes": str(config.segment_bytes)}
    topic = InternalTopicSpec(
        OFFSETS_TOPIC, config.num_partitions, config.replication_factor, configs, "offsets_topic_creation_failed"
    )
    return RuntimeConfig(topic, "group_coordinator", config.commit_timeout_ms)


async def write_outcome(written: asyncio.Future[ProduceResult]) -> ErrorCode:
    """The error of an append; waiting for it does not cancel it when the waiter is cancelled."""
    await asyncio.wait([written])
    return ErrorCode.REQUEST_TIMED_OUT if written.cancelled() else written.result().error


class GroupCoordinator:
    def __init__(self, manager: ReplicaManager, controller: ControllerClient, config: CoordinatorConfig) -> None:
        self.manager = manager
        self.controller = controller
        self.config = config
        replay = partial(OffsetsReplay, topic_names=self.topic_names)
        self.runtime: CoordinatorRuntime[OffsetsShard, Result] = CoordinatorRuntime(
            manager, controller, OffsetsShard, replay, runtime_config(config), self._announce_loaded
        )
        # The KIP-848 members whose holdings this broker's events last told of, by group: what a load corrects.
        self._announced: dict[str, set[str]] = {}
        self._offsets_expiry = IntervalCheck(config.offsets_retention_check_interval_ms)
        self._new_topics = NewTopics()
        self._log = structlog.get_logger()

    def start(self) -> None:
        self.runtime.start(self.tick)

    async def stop(self) -> None:
        await self.runtime.stop()

    # ---- where a group lives ----

    def find_coordinator(self, group_id: str) -> CoordinatorLookup:
        """The broker leading the group's __consumer_offsets partition; the topic is created on first use."""
        return self.runtime.topic.find_coordinator(group_id)

    # ---- running the core ----

    def run(
        self, group_id: str, failure: Callable[[ErrorCode], Result], operation: Callable[[Group, int, int], GroupStep]
    ) -> asyncio.Future[Result]:
        """Apply `operation(group, request_id, now)` to the group where it lives; the future gives its answer,
        or `failure(error)` when this broker cannot coordinate the group now."""

        def apply(shard: OffsetsShard, request_id: int) -> None:
            self._apply(shard, operation(shard.groups.get(group_id) or Group(group_id), request_id, monotonic_ms()))

        return self.runtime.run(group_id, lambda _, error: failure(error), apply)

    def group(self, group_id: str) -> Group | ErrorCode:
        """The group as it stands (a never-seen group is a new empty one), for the read-only APIs."""
        shard = self._readable_shard(group_id)
        if isinstance(shard, ErrorCode):
            return shard
        return shard.groups.get(group_id) or Group(group_id, state=GroupState.DEAD)

    def _readable_shard(self, group_id: str) -> OffsetsShard | ErrorCode:
        """The group's shard for a read-only API, COORDINATOR_LOAD_IN_PROGRESS while its loaded tail is uncommitted:
        Kafka reads at the last committed offset, and what this broker holds then is the tail's state."""
        shard = self.runtime.shard_for(group_id)
        if not isinstance(shard, ErrorCode) and shard.tail_uncommitted():
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return shard

    def listed_groups(self) -> list[Group] | ErrorCode:
        """Every group of the partitions this broker coordinates (ListGroups)."""
        shards = self.runtime.shards_if_loaded()
        if isinstance(shards, ErrorCode):
            return shards
        return [g for shard in shards for g in shard.groups.values() if g.state != GroupState.DEAD]

    # ---- KIP-848 consumer groups ----

    def topic_partitions(self) -> dict[str, int]:
        return {name: len(topic.partitions) for name, topic in self.manager.metadata.image.topics_by_name.items()}

    def partition_racks(self) -> dict[GroupPartition, frozenset[str]]:
        """The racks of each partition's replicas, for the rack-aware assignors (empty when no broker has one)."""
        return partition_racks(self.manager.metadata.image)

    def topic_ids(self) -> dict[str, uuid.UUID]:
        return {name: topic.topic_id for name, topic in self.manager.metadata.image.topics_by_name.items()}

    def topic_names(self) -> dict[uuid.UUID, str]:
        return {topic_id: topic.name for topic_id, topic in self.manager.metadata.image.topics_by_id.items()}

    def consumer_heartbeat(
        self, group_id: str, request: HeartbeatRequest, describable: Callable[[str], bool] | None = None
    ) -> Awaitable[HeartbeatResponse]:
        """Runs the heartbeat now; its answer comes once the records of what it changed are written (acks=all).
        `describable`: the topics the member may DESCRIBE, the only ones a resolution it starts matches."""
        shard = self.runtime.shard_for(group_id)
        if isinstance(shard, ErrorCode):
            return answered(HeartbeatResponse(shard))
        step = consumer_groups.heartbeat(
            shard.consumer_groups.get(group_id),
            shard.groups.get(group_id),
            group_id,
            request,
            self.topic_partitions(),
            self.topic_ids(),
            self.config.consumer,
            monotonic_ms(),
            self.runtime.new_request_id(),
            self.partition_racks(),
            self._new_topics.version(self.manager.metadata.image),
        )
        before = shard.consumer_groups.get(group_id)
        self._store_consumer_group(shard, group_id, step.group)
        written = self._write_consumer_records(shard, step.records) if step.records else shard.last_write
        self._log_once_written(shard, step.events, written)
        resolving = step.group is not None and step.group.regex_resolution_pending
        if resolving and (before is None or not before.regex_resolution_pending):
            # Kafka resolves them in its executor, after this heartbeat: its answer has none of their topics.
            asyncio.get_running_loop().call_soon(self._resolve_regexes, shard, group_id, describable)
        if step.conversion is not None:
            self._apply(shard, GroupStep(step.conversion.classic, step.conversion.effects))
        if written is None or (written.done() and not step.records):
            return answered(step.response)
        return self._answer_when_written(written, step.response)

    def _resolve_regexes(self, shard: OffsetsShard, group_id: str, describable: Callable[[str], bool] | None) -> None:
        group = shard.consumer_groups.get(group_id)
        if group is None or not group.regex_resolution_pending or not self.runtime.is_current(shard):
            return  # gone, converted or resolved meanwhile; an unloaded shard's groups are read again from the log
        topics = self.topic_partitions()
        version = self._new_topics.version(self.manager.metadata.image)
        step = consumer_groups.resolve(group, topics, self.topic_ids(), version, monotonic_ms(), describable)
        self._store_consumer_group(shard, group_id, step.group)
        written = self._write_consumer_records(shard, step.records) if step.records else shard.last_write
        self._log_once_written(shard, step.events, written)

    async def _answer_when_written(
        self, written: asyncio.Future[ProduceResult], response: HeartbeatResponse
    ) -> HeartbeatResponse:
        error = await write_outcome(written)
        if error != ErrorCode.NONE:
            return HeartbeatResponse(metadata_store_error(error), f"the group's records were not written: {error.name}")
        return response

    def _write_consumer_records(
        self, shard: OffsetsShard, records: tuple[consumer_groups.Record, ...]
    ) -> asyncio.Future[ProduceResult]:
        now_ms = wall_ms()
        batch = build_batch([Record(encode_value(r.value), encode_key(r.key), now_ms) for r in records])
        written = self.runtime.write(shard, batch)
        shard.last_write = written
        written.add_done_callback(lambda done: self._consumer_records_written(shard, done))
        return written

    def _consumer_records_written(
        self, shard: OffsetsShard, done: asyncio.Future[ProduceResult], what: str = "a consumer group write"
    ) -> None:
        """A failed write leaves memory ahead of the log: the partition's groups are reloaded from the log."""
        error = ErrorCode.REQUEST_TIMED_OUT if done.cancelled() else done.result().error
        if error != ErrorCode.NONE and self.runtime.is_current(shard):
            self.runtime.unload(shard, f"{what} failed: {error.name}")

    def _store_consumer_group(self, shard: OffsetsShard, group_id: str, group: ConsumerGroup | None) -> None:
        if group is None:
            shard.consumer_groups.pop(group_id, None)
        else:
            shard.consumer_groups[group_id] = group

    def _log_once_written(
        self,
        shard: OffsetsShard,
        events: tuple[consumer_groups.Event, ...],
        written: asyncio.Future[ProduceResult] | None,
    ) -> None:
        """A change's events once the records that store it are acknowledged (those of the write before it, when it
        wrote none), when the members are answered. A failed write reloads the groups from the log, and a change
        refused before its append, or lost with a leadership the coordinator no longer has, is gone: its events
        would have an analysis take a member for the owner of partitions it was never given. Nor are the events of
        an unloaded shard's later writes logged: a write that timed out may still be committed, its events never
        told, and the load tells of what the log holds."""

        def log(done: asyncio.Future[ProduceResult] | None) -> None:
            if not self.runtime.is_current(shard):
                return
            if done is None or (not done.cancelled() and done.result().error == ErrorCode.NONE):
                self._log_events(events)

        if not events:
            return
        if written is None or written.done():
            log(written)
        else:
            written.add_done_callback(log)

    def _log_events(self, events: Iterable[consumer_groups.Event]) -> None:
        for event in events:
            self._log.info(event.name, **event.fields)
            group, member = event.fields.get("group_id"), event.fields.get("member_id")
            if event.name == "consumer_group_member_assignment":
                self._announced.setdefault(str(group), set()).add(str(member))
            elif event.name in ("consumer_group_member_left", "consumer_group_member_fenced"):
                self._announced.get(str(group), set()).discard(str(member))

    def _announce_loaded(self, shard: OffsetsShard) -> None:
        """A loaded partition's KIP-848 groups as the log has them: each member's holdings, and as gone
        (`reloaded`) the members the log no longer holds that it or this broker's events named. A write that failed
        after its append (timed out) is in the log, though its events were never logged, whichever broker wrote it."""
        events: list[consumer_groups.Event] = []
        partitions = self.config.num_partitions
        mine = [g for g in self._announced if partition_for(g, partitions) == shard.partition]
        for group_id in sorted(set(mine) | set(shard.consumer_groups) | set(shard.logged_members)):
            group = shard.consumer_groups.get(group_id)
            members = set(group.members) if group is not None else set()
            named = self._announced.get(group_id, set()) | shard.logged_members.get(group_id, set())
            for gone in sorted(named - members):
                fields = {"group_id": group_id, "member_id": gone, "reason": "reloaded"}
                events.append(consumer_groups.Event("consumer_group_member_left", fields))
            events += consumer_groups.member_assignment_events(group_id, None, group)
        self._log_once_written(shard, tuple(events), self._loaded_tail(shard))

    def _loaded_tail(self, shard: OffsetsShard) -> asyncio.Future[ProduceResult] | None:
        """Kafka's loader counts a tail past the HWM as written, not committed: what was loaded is answered and told
        of once the HWM passes it, as after a write, and a tail that never gets there is loaded again."""
        tp = TopicPartition(OFFSETS_TOPIC, shard.partition)
        tail = self.manager.high_watermark_reached(tp, self.config.commit_timeout_ms)
        if tail is not None:
            shard.last_write = shard.loaded_tail = tail
            tail.add_done_callback(lambda done: self._consumer_records_written(shard, done, "the loaded tail's commit"))
        return tail

    def consumer_group(self, group_id: str) -> ConsumerGroup | ErrorCode | None:
        """The group's KIP-848 state where this broker coordinates it; None when it is not a consumer group."""
        shard = self.runtime.shard_for(group_id)
        return shard if isinstance(shard, ErrorCode) else shard.consumer_groups.get(group_id)

    def described_consumer_group(self, group_id: str) -> ConsumerGroup | ErrorCode | None:
        """`consumer_group` for ConsumerGroupDescribe, which reads committed state only."""
        shard = self._readable_shard(group_id)
        return shard if isinstance(shard, ErrorCode) else shard.consumer_groups.get(group_id)

    def listed_consumer_groups(self) -> list[ConsumerGroup]:
        """The KIP-848 groups of the partitions this broker coordinates (after listed_groups synced them)."""
        return [g for shard in self.runtime.loaded_shards() for g in shard.consumer_groups.values()]

    def _apply(self, shard: OffsetsShard, step: GroupStep) -> None:
        group = step.group
        if group.is_idle or (group.state == GroupState.DEAD and not group.pending_writes):
            shard.groups.pop(group.group_id, None)
        else:
            shard.groups[group.group_id] = group
        for effect in step.effects:
            if isinstance(effect, Answer):
                self._answer(shard, effect)
            elif isinstance(effect, Append):
                self._append(shard, group.group_id, effect)
            elif isinstance(effect, GroupEvent):
                self._log.info(effect.name, **effect.fields)

    def _answer(self, shard: OffsetsShard, answer: Answer) -> None:
        """At once, or once a loaded tail is committed: a tail that is not unloads the shard, which answers the
        request NOT_COORDINATOR first."""
        tail = shard.loaded_tail
        if tail is None or tail.done():
            self.runtime.answer(answer.request_id, answer.result)
        else:
            tail.add_done_callback(lambda _: self.runtime.answer(answer.request_id, answer.result))

    def _append(self, shard: OffsetsShard, group_id: str, append: Append) -> None:
        now_ms = wall_ms()
        records = with_wall_state_timestamps(append.records, Clock(monotonic_ms(), now_ms).to_wall)
        batch = build_batch([Record(encode_value(r.value), encode_key(r.key), now_ms) for r in records])
        produced = self.runtime.write(shard, batch)
        produced.add_done_callback(lambda done: self._appended(shard, group_id, append.request_id, done))

    def _appended(
        self, shard: OffsetsShard, group_id: str, request_id: int, done: asyncio.Future[ProduceResult]
    ) -> None:
        if not self.runtime.is_current(shard):
            return  # unloaded: its waiting requests were answered NOT_COORDINATOR
        group = shard.groups.get(group_id)
        if group is None:
            return
        error = done.result().error if not done.cancelled() else ErrorCode.REQUEST_TIMED_OUT
        self._apply(shard, append_done(group, request_id, error, self.config.group, monotonic_ms()))

    # ---- transactional offset commits ----

    async def txn_commit_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        entries: list[tuple[TopicPartitionKey, int, int, str | None]],
    ) -> tuple[ErrorCode, dict[TopicPartitionKey, ErrorCode]]:
        """TxnOffsetCommit: validated as an OffsetCommit, written in a transactional batch of the producer (acks=all),
        visible once the transaction's COMMIT marker lands (`on_txn_marker`). Returns the request's error, or
        NONE and each partition's."""
        shard = self.runtime.shard_for(group_id)
        if isinstance(shard, ErrorCode):
            return shard, {}
        group = shard.groups.get(group_id) or Group(group_id)
        request = CommitRequest(0, member_id, group_instance_id, generation_id, (), 8)
        error = validate_offset_commit(group, request, transactional=True)
        if error != ErrorCode.NONE:
            return error, {}
        now, limit = wall_ms(), self.config.group.max_metadata_size
        refused = {
            key: ErrorCode.OFFSET_METADATA_TOO_LARGE for key, _, _, m in entries if len((m or "").encode()) > limit
        }
        offsets = [
            (key, OffsetAndMetadata(offset, epoch, metadata or "", now))
            for key, offset, epoch, metadata in entries
            if key not in refused
        ]
        if not offsets:
            return ErrorCode.NONE, refused
        records = offsets_records(group_id, offsets)
        batch = build_batch(
            [Record(encode_value(r.value), encode_key(r.key), now) for r in records],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0,
            attributes=TRANSACTIONAL_FLAG,
        )
        result = await self.runtime.write(shard, batch)
        stored = store_error(result.error)
        if stored == ErrorCode.NONE and self.runtime.is_current(shard):
            shard.txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)
        return ErrorCode.NONE, {**{key: stored for key, _ in offsets}, **refused}

    def unstable_offsets(self, group_id: str) -> set[TopicPartitionKey]:
        """The group's partitions with a transactional commit awaiting its marker (Kafka's UNSTABLE_OFFSET_COMMIT)."""
        shard = self.runtime.shard_for(group_id)
        if isinstance(shard, ErrorCode):
            return set()
        return awaiting_marker(shard.txn_offsets, group_id)

    def on_txn_marker(self, tp: TopicPartition, marker: EndTxnMarker) -> None:
        """A transaction's marker is in a __consumer_offsets partition: its offset commits there take effect or go."""
        shard = self.runtime.shard(tp.partition) if tp.topic == OFFSETS_TOPIC else None
        if shard is None or marker.producer_id not in shard.txn_offsets:
            return
        done = complete(shard.txn_offsets, shard.groups, marker.producer_id, marker.commit)
        shard.groups.update(done.groups)
        for fields in done.events:
            self._log.info("txn_offsets_completed", partition=tp.partition, **fields)

    # ---- timers ----

    def tick(self) -> None:
        self.runtime.sync_all()
        now = monotonic_ms()
        for shard in self.runtime.loaded_shards():
            for group in list(shard.groups.values()):
                step = expire(group, now, self.config.group)
                if step.effects or step.group is not group:
                    self._apply(shard, step)
            self._tick_consumer_groups(shard, now)
        self._maybe_expire_offsets(now)

    def _maybe_expire_offsets(self, now: int) -> None:
        """Every offsets.retention.check.interval.ms (the first check one interval after start)."""
        if not self._offsets_expiry.due(now):
            return
        clock = Clock(now, wall_ms())
        for shard in self.runtime.loaded_shards():
            self._expire_shard_offsets(shard, clock)

    def _expire_shard_offsets(self, shard: OffsetsShard, clock: Clock) -> None:
        empty_consumer_groups = [g for g, c in shard.consumer_groups.items() if not c.members]
        for group_id in [*shard.groups, *(g for g in empty_consumer_groups if g not in shard.groups)]:
            group = shard.groups.get(group_id) or Group(group_id)
            consumer = shard.consumer_groups.get(group_id)
            empty = consumer is not None and not consumer.members
            scope = ExpiryScope(
                self.config.offsets_retention_ms,
                consumer_group_topics(consumer) if consumer is not None else None,
                frozenset(awaiting_marker(shard.txn_offsets, group_id)),
                consumer_groups.tombstones(consumer, self.topic_ids()) if empty and consumer is not None else (),
            )
            step = expire_offsets(group, clock, scope, self.runtime.new_request_id())
            if step.effects and self.runtime.is_current(shard):
                if _deletes_consumer_group(step) and empty:
                    # Gone from memory once its tombstones are on their way, as a deleted group is at once.
                    self._store_consumer_group(shard, group_id, None)
                self._apply(shard, step)

    def _tick_consumer_groups(self, shard: OffsetsShard, now: int) -> None:
        if not shard.consumer_groups:
            return
        topics, topic_ids = self.topic_partitions(), self.topic_ids()
        for group_id, group in list(shard.consumer_groups.items()):
            classic = shard.groups.get(group_id)
            request_id = self.runtime.new_request_id()
            step = consumer_groups.tick(group, topics, topic_ids, self.config.consumer, now, classic, request_id)
            if step.events or step.group is not group:
                self._store_consumer_group(shard, group_id, step.group)
            if not step.records:
                self._log_once_written(shard, step.events, shard.last_write)
            elif self.runtime.is_current(shard):
                self._log_once_written(shard, step.events, self._write_consumer_records(shard, step.records))
            if step.conversion is not None and self.runtime.is_current(shard):
                self._apply(shard, GroupStep(step.conversion.classic, step.conversion.effects))

    def delete_group(self, group_id: str) -> asyncio.Future[Result]:
        """DeleteGroups: a classic group, or an Empty KIP-848 group with its offsets, as Kafka deletes them; a
        consumer group with members is NON_EMPTY_GROUP."""

        def apply(shard: OffsetsShard, request_id: int) -> None:
            holder = shard.groups.get(group_id) or Group(group_id)
            consumer = shard.consumer_groups.get(group_id)
            if consumer is not None and consumer.members:
                self.runtime.answer(request_id, DeleteResult(ErrorCode.NON_EMPTY_GROUP))
                return
            removed = consumer_groups.tombstones(consumer, self.topic_ids()) if consumer is not None else ()
            step = deleted_group(holder, request_id, removed)
            if consumer is not None and step.group.state == GroupState.DEAD:
                self._store_consumer_group(shard, group_id, None)
            self._apply(shard, step)

        return self.runtime.run(group_id, lambda _, error: DeleteResult(error), apply)

    # ---- classic members of consumer groups ----

    def run_classic(
        self,
        group_id: str,
        failure: Callable[[ErrorCode], Result],
        classic: Callable[[Group, int, int], GroupStep],
        mixed: Callable[[ConsumerGroup, int], MixedStep],
        join: bool = False,
    ) -> asyncio.Future[Result]:
        """A classic protocol request: run by the classic core, or by the consumer group when the id is one (its
        classic members); decided where the group lives, when the request runs. A JoinGroup (`join`) to an Empty
        consumer group makes it classic."""

        def apply(shard: OffsetsShard, request_id: int) -> None:
            consumer = shard.consumer_groups.get(group_id)
            now = monotonic_ms()
            if join and consumer is not None and not consumer.members:
                # Kafka converts an Empty consumer group to a classic one on a classic JoinGroup: its records go.
                self._write_consumer_records(shard, consumer_groups.tombstones(consumer, self.topic_ids()))
                self._store_consumer_group(shard, group_id, None)
                consumer = None
            if consumer is None:
                self._apply(shard, classic(shard.groups.get(group_id) or Group(group_id), request_id, now))
                return
            self._run_mixed(shard, consumer, mixed(consumer, now), request_id, failure, now)

        return self.runtime.run(group_id, lambda _, error: failure(error), apply)

    def _run_mixed(
        self,
        shard: OffsetsShard,
        group: ConsumerGroup,
        mixed: MixedStep,
        request_id: int,
        failure: Callable[[ErrorCode], Result],
        now: int,
    ) -> None:
        classic = shard.groups.get(group.group_id)
        holder = consumer_groups.Holder(classic, self.config.consumer, now, self.runtime.new_request_id())
        step = consumer_groups.classic_request(group, mixed, self.topic_ids(), holder=holder)
        self._store_consumer_group(shard, group.group_id, step.group)
        written = self._write_consumer_records(shard, step.records) if step.records else shard.last_write
        self._log_once_written(shard, step.events, written)
        if step.conversion is not None:
            self._apply(shard, GroupStep(step.conversion.classic, step.conversion.effects))
        if written is None or written.done() and not step.records:
            self.runtime.answer(request_id, step.result)
            return

        def done(write: asyncio.Future[ProduceResult]) -> None:
            error = ErrorCode.REQUEST_TIMED_OUT if write.cancelled() else write.result().error
            result = step.result if error == ErrorCode.NONE else failure(metadata_store_error(error))
            self.runtime.answer(request_id, result)

        written.add_done_callback(done)


def _deletes_consumer_group(step: GroupStep) -> bool:
    """The expiry step deletes the group (with an Empty KIP-848 group's tombstones, when it is one)."""
    return any(isinstance(p, PendingOffsetExpiry) and p.delete_group for p in step.group.pending_writes.values())
