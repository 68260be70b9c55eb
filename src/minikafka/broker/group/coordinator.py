"""The group coordinator's shell: it owns the __consumer_offsets partitions this broker leads, runs the pure group
core on each request and timer tick, and carries out its effects (answers, acks=all appends through the replica
manager, events).

A partition's groups are loaded from its log when this broker becomes its leader (requests for them get
COORDINATOR_LOAD_IN_PROGRESS meanwhile, but a Heartbeat NONE) and dropped when it stops leading (NOT_COORDINATOR;
held requests are answered so). A new leader epoch reloads: the log is the truth, not what this broker remembered."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.consumer_group import shell as consumer_groups
from minikafka.broker.consumer_group.heartbeat import HeartbeatRequest, HeartbeatResponse
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig
from minikafka.broker.consumer_group.persistence import ConsumerGroupRecord, load_consumer_groups
from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.group.effects import Answer, Append, GroupEvent, GroupStep, Result
from minikafka.broker.group.loader import load_groups
from minikafka.broker.group.membership import expire
from minikafka.broker.group.offset_expiry import ExpiryScope, consumer_group_topics, expire_offsets
from minikafka.broker.group.offsets import (
    CommitRequest,
    append_done,
    metadata_store_error,
    store_error,
    validate_offset_commit,
)
from minikafka.broker.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    OffsetsRecord,
    RecordFormatError,
    decode,
    encode_key,
    encode_value,
    with_wall_state_timestamps,
)
from minikafka.broker.group.state import Clock, Group, GroupConfig, GroupState, OffsetAndMetadata, TopicPartitionKey
from minikafka.broker.group.txn_offsets import PendingTxnOffsets, as_offsets, complete, offsets_records
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import ReplicaManager, answered
from minikafka.common.clock import monotonic_ms, wall_ms
from minikafka.common.control_batch import EndTxnMarker, read_marker
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch, iter_batches
from minikafka.pb import controller_pb2

OFFSETS_TOPIC = "__consumer_offsets"
TICK_S = 0.1  # session timeouts and rebalance deadlines are checked this often
LOAD_CHUNK_BYTES = 1048576


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


@dataclass
class OffsetsShard:
    """The groups of one __consumer_offsets partition while this broker leads it at `leader_epoch`."""

    partition: int
    leader_epoch: int
    loaded: bool = False
    groups: dict[str, Group] = field(default_factory=dict)
    consumer_groups: dict[str, ConsumerGroup] = field(default_factory=dict)  # KIP-848's
    txn_offsets: PendingTxnOffsets = field(default_factory=dict)  # transactional commits awaiting their marker
    # The latest write of consumer group records: an answer that changed nothing still waits for it, so no member
    # is told of a state a failover could lose.
    last_write: asyncio.Future[ProduceResult] | None = None


@dataclass(frozen=True)
class Waiting:
    partition: int
    future: asyncio.Future[Result]
    failure: Callable[[ErrorCode], Result]


@dataclass(frozen=True)
class CoordinatorLookup:
    error: ErrorCode
    node_id: int = -1
    message: str | None = None


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
        ),
        config.group_coordinator_rebalance_protocols,
        config.offsets_topic_segment_bytes,
        config.offsets_retention_minutes * 60000,
        config.offsets_retention_check_interval_ms,
    )


@dataclass(frozen=True)
class SplitRecords:
    classic: list[OffsetsRecord]
    consumer: list[ConsumerGroupRecord]


def split_records(records: list[OffsetsRecord]) -> SplitRecords:
    """Offsets and classic group metadata for the classic loader; KIP-848's records for the consumer groups'."""
    split = SplitRecords([], [])
    for record in records:
        key, value = record.key, record.value
        if isinstance(key, OffsetCommitKey | GroupMetadataKey):
            split.classic.append(record)
        elif not isinstance(value, OffsetCommitValue | GroupMetadataValue):
            split.consumer.append(ConsumerGroupRecord(key, value))
    return split


async def write_outcome(written: asyncio.Future[ProduceResult]) -> ErrorCode:
    """The error of an append; waiting for it does not cancel it when the waiter is cancelled."""
    await asyncio.wait([written])
    return ErrorCode.REQUEST_TIMED_OUT if written.cancelled() else written.result().error


def java_string_hash(text: str) -> int:
    """Java's String.hashCode over UTF-16 code units, as a signed 32-bit int."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + int.from_bytes(data[index : index + 2], "big")) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's Utils.abs(groupId.hashCode) % partitions."""
    code = java_string_hash(group_id)
    return (0 if code == -(1 << 31) else abs(code)) % partitions


class GroupCoordinator:
    def __init__(self, manager: ReplicaManager, controller: ControllerClient, config: CoordinatorConfig) -> None:
        self.manager = manager
        self.controller = controller
        self.config = config
        self._shards: dict[int, OffsetsShard] = {}
        self._waiting: dict[int, Waiting] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._creating: asyncio.Task[None] | None = None
        self._next_expiry_check_ms: int | None = None
        self._log = structlog.get_logger()

    def start(self) -> None:
        self._spawn(self._tick_forever())

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- where a group lives ----

    def offsets_partitions(self) -> int | None:
        topic = self.manager.metadata.image.topics_by_name.get(OFFSETS_TOPIC)
        return len(topic.partitions) if topic is not None and topic.partitions else None

    def find_coordinator(self, group_id: str) -> CoordinatorLookup:
        """The broker leading the group's __consumer_offsets partition; the topic is created on first use."""
        partitions = self.offsets_partitions()
        if partitions is None:
            self._create_offsets_topic()
            return CoordinatorLookup(ErrorCode.COORDINATOR_NOT_AVAILABLE, message=f"{OFFSETS_TOPIC} is being created")
        image = self.manager.metadata.image
        topic = image.topics_by_name[OFFSETS_TOPIC]
        registration = topic.partitions.get(partition_for(group_id, partitions))
        if registration is None or registration.leader < 0:
            return CoordinatorLookup(ErrorCode.COORDINATOR_NOT_AVAILABLE, message="the partition has no leader")
        return CoordinatorLookup(ErrorCode.NONE, registration.leader)

    def _create_offsets_topic(self) -> None:
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())

    async def _create(self) -> None:
        topic = controller_pb2.CreateTopicsRequest.CreatableTopic(
            name=OFFSETS_TOPIC,
            num_partitions=self.config.num_partitions,
            replication_factor=self.config.replication_factor,
            # Kafka's: compacted, each group's and each offset's latest record kept (retention would delete live
            # commits); an expired offset or a deleted group leaves a tombstone.
            configs={"cleanup.policy": "compact", "segment.bytes": str(self.config.segment_bytes)},
        )
        response = await self.controller.call("CreateTopics", controller_pb2.CreateTopicsRequest(topics=[topic]))
        if response is None:
            return
        for result in response.topics:
            error = ErrorCode.of(result.error_code)
            if error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                self._log.warning("offsets_topic_creation_failed", error=error.name, error_message=result.error_message)

    def _shard_for(self, group_id: str) -> OffsetsShard | ErrorCode:
        partitions = self.offsets_partitions()
        if partitions is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        shard = self._sync_shard(partition_for(group_id, partitions))
        if shard is None:
            return ErrorCode.NOT_COORDINATOR
        return shard if shard.loaded else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    def _sync_shard(self, partition: int) -> OffsetsShard | None:
        """The shard of a partition this broker leads now, (re)loading it on a new leader epoch."""
        replica = self.manager.replicas.get(TopicPartition(OFFSETS_TOPIC, partition))
        shard = self._shards.get(partition)
        if replica is None or replica.leader is None or not self.manager.serving():
            if shard is not None:
                self._unload(shard, "no longer the leader")
            return None
        if shard is not None and shard.leader_epoch == replica.leader_epoch:
            return shard
        if shard is not None:
            self._unload(shard, f"new leader epoch {replica.leader_epoch}")
        shard = self._shards[partition] = OffsetsShard(partition, replica.leader_epoch)
        self._spawn(self._load(shard))
        return shard

    # ---- loading and unloading ----

    async def _load(self, shard: OffsetsShard) -> None:
        started = monotonic_ms()
        records: list[OffsetsRecord] = []
        replica = self.manager.replicas.get(TopicPartition(OFFSETS_TOPIC, shard.partition))
        if replica is None:
            return
        offset, end = replica.log.log_start_offset, replica.log.log_end_offset
        # A transaction's offset commits count from its COMMIT marker on, and not at all after an ABORT.
        open_txns: dict[int, list[OffsetsRecord]] = {}
        while offset < end and self._shards.get(shard.partition) is shard:
            try:
                data = replica.log.read(offset, LOAD_CHUNK_BYTES, max_offset=end)
            except KafkaError as error:
                self._log.warning("group_coordinator_load_failed", partition=shard.partition, error=str(error))
                return
            if not data:
                break
            for batch in iter_batches(data):
                offset = batch.next_offset
                if batch.is_control:
                    marker = read_marker(batch)
                    held = open_txns.pop(batch.producer_id, [])
                    if marker is not None and marker.commit:
                        records.extend(held)
                elif batch.is_transactional:
                    open_txns.setdefault(batch.producer_id, []).extend(self._decode(batch.records(), shard.partition))
                else:
                    records.extend(self._decode(batch.records(), shard.partition))
            await asyncio.sleep(0)  # a long log does not hold up the broker's other work
        if self._shards.get(shard.partition) is not shard:
            return
        shard.txn_offsets = {producer_id: as_offsets(held) for producer_id, held in open_txns.items()}
        now = monotonic_ms()
        split = split_records(records)
        shard.groups = load_groups(split.classic, now, wall_ms())
        topic_names = self.topic_names() if split.consumer else {}
        shard.consumer_groups = load_consumer_groups(split.consumer, topic_names, now)
        shard.loaded = True
        self._log.info(
            "group_coordinator_loaded",
            partition=shard.partition,
            leader_epoch=shard.leader_epoch,
            groups=len(shard.groups),
            consumer_groups=len(shard.consumer_groups),
            offsets=sum(len(g.offsets) for g in shard.groups.values()),
            load_ms=monotonic_ms() - started,
        )

    def _decode(self, records: Iterator[Record], partition: int) -> Iterator[OffsetsRecord]:
        for record in records:
            try:
                yield decode(record.key, record.value)
            except (RecordFormatError, UnicodeDecodeError) as error:
                self._log.warning(
                    "offsets_record_skipped", partition=partition, offset=record.offset, reason=str(error)
                )

    def _unload(self, shard: OffsetsShard, reason: str) -> None:
        del self._shards[shard.partition]
        for request_id, waiting in list(self._waiting.items()):
            if waiting.partition == shard.partition:
                del self._waiting[request_id]
                if not waiting.future.done():
                    waiting.future.set_result(waiting.failure(ErrorCode.NOT_COORDINATOR))
        self._log.info(
            "group_coordinator_unloaded",
            partition=shard.partition,
            leader_epoch=shard.leader_epoch,
            groups=len(shard.groups),
            reason=reason,
        )

    # ---- running the core ----

    def run(
        self, group_id: str, failure: Callable[[ErrorCode], Result], operation: Callable[[Group, int, int], GroupStep]
    ) -> asyncio.Future[Result]:
        """Apply `operation(group, request_id, now)` to the group where it lives; the future gives its answer,
        or `failure(error)` when this broker cannot coordinate the group now."""
        shard = self._shard_for(group_id)
        if isinstance(shard, ErrorCode):
            return answered(failure(shard))
        request_id = next(self._ids)
        future: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = Waiting(shard.partition, future, failure)
        self._apply(shard, operation(shard.groups.get(group_id) or Group(group_id), request_id, monotonic_ms()))
        return future

    def group(self, group_id: str) -> Group | ErrorCode:
        """The group as it stands (a never-seen group is a new empty one), for the read-only APIs."""
        shard = self._shard_for(group_id)
        if isinstance(shard, ErrorCode):
            return shard
        return shard.groups.get(group_id) or Group(group_id, state=GroupState.DEAD)

    def listed_groups(self) -> list[Group] | ErrorCode:
        """Every group of the partitions this broker coordinates (ListGroups)."""
        self._sync_all()
        if any(not shard.loaded for shard in self._shards.values()):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return [g for shard in self._shards.values() for g in shard.groups.values() if g.state != GroupState.DEAD]

    # ---- KIP-848 consumer groups ----

    def topic_partitions(self) -> dict[str, int]:
        return {name: len(topic.partitions) for name, topic in self.manager.metadata.image.topics_by_name.items()}

    def topic_ids(self) -> dict[str, uuid.UUID]:
        return {name: topic.topic_id for name, topic in self.manager.metadata.image.topics_by_name.items()}

    def topic_names(self) -> dict[uuid.UUID, str]:
        return {topic_id: topic.name for topic_id, topic in self.manager.metadata.image.topics_by_id.items()}

    def consumer_heartbeat(self, group_id: str, request: HeartbeatRequest) -> Awaitable[HeartbeatResponse]:
        """Runs the heartbeat now; its answer comes once the records of what it changed are written (acks=all)."""
        shard = self._shard_for(group_id)
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
        )
        self._store_consumer_group(shard, group_id, step.group, step.events)
        written = self._write_consumer_records(shard, step.records) if step.records else shard.last_write
        if written is None or (written.done() and not step.records):
            return answered(step.response)
        return self._answer_when_written(written, step.response)

    async def _answer_when_written(
        self, written: asyncio.Future[ProduceResult], response: HeartbeatResponse
    ) -> HeartbeatResponse:
        error = await write_outcome(written)
        if error != ErrorCode.NONE:
            return HeartbeatResponse(metadata_store_error(error), f"the group's records were not written: {error.name}")
        return response

    def _write_consumer_records(
        self, shard: OffsetsShard, records: tuple[ConsumerGroupRecord, ...]
    ) -> asyncio.Future[ProduceResult]:
        now_ms = wall_ms()
        batch = build_batch([Record(encode_value(r.value), encode_key(r.key), now_ms) for r in records])
        tp = TopicPartition(OFFSETS_TOPIC, shard.partition)
        written = self.manager.produce(tp, batch, -1, self.config.commit_timeout_ms, internal_topics_allowed=True)
        shard.last_write = written
        written.add_done_callback(lambda done: self._consumer_records_written(shard, done))
        return written

    def _consumer_records_written(self, shard: OffsetsShard, done: asyncio.Future[ProduceResult]) -> None:
        """A failed write leaves memory ahead of the log: the partition's groups are reloaded from the log."""
        error = ErrorCode.REQUEST_TIMED_OUT if done.cancelled() else done.result().error
        if error != ErrorCode.NONE and self._shards.get(shard.partition) is shard:
            self._unload(shard, f"a consumer group write failed: {error.name}")

    def _store_consumer_group(
        self,
        shard: OffsetsShard,
        group_id: str,
        group: ConsumerGroup | None,
        events: tuple[consumer_groups.Event, ...],
    ) -> None:
        if group is None:
            shard.consumer_groups.pop(group_id, None)
        else:
            shard.consumer_groups[group_id] = group
        for event in events:
            self._log.info(event.name, **event.fields)

    def consumer_group(self, group_id: str) -> ConsumerGroup | ErrorCode | None:
        """The group's KIP-848 state where this broker coordinates it; None when it is not a consumer group."""
        shard = self._shard_for(group_id)
        return shard if isinstance(shard, ErrorCode) else shard.consumer_groups.get(group_id)

    def listed_consumer_groups(self) -> list[ConsumerGroup]:
        """The KIP-848 groups of the partitions this broker coordinates (after listed_groups synced them)."""
        return [g for shard in self._shards.values() if shard.loaded for g in shard.consumer_groups.values()]

    def _apply(self, shard: OffsetsShard, step: GroupStep) -> None:
        group = step.group
        if group.is_idle or (group.state == GroupState.DEAD and not group.pending_writes):
            shard.groups.pop(group.group_id, None)
        else:
            shard.groups[group.group_id] = group
        for effect in step.effects:
            if isinstance(effect, Answer):
                waiting = self._waiting.pop(effect.request_id, None)
                if waiting is not None and not waiting.future.done():
                    waiting.future.set_result(effect.result)
            elif isinstance(effect, Append):
                self._append(shard, group.group_id, effect)
            elif isinstance(effect, GroupEvent):
                self._log.info(effect.name, **effect.fields)

    def _append(self, shard: OffsetsShard, group_id: str, append: Append) -> None:
        now_ms = wall_ms()
        records = with_wall_state_timestamps(append.records, Clock(monotonic_ms(), now_ms).to_wall)
        batch = build_batch([Record(encode_value(r.value), encode_key(r.key), now_ms) for r in records])
        tp = TopicPartition(OFFSETS_TOPIC, shard.partition)
        produced = self.manager.produce(tp, batch, -1, self.config.commit_timeout_ms, internal_topics_allowed=True)
        produced.add_done_callback(lambda done: self._appended(shard, group_id, append.request_id, done))

    def _appended(
        self, shard: OffsetsShard, group_id: str, request_id: int, done: asyncio.Future[ProduceResult]
    ) -> None:
        if self._shards.get(shard.partition) is not shard:
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
        shard = self._shard_for(group_id)
        if isinstance(shard, ErrorCode):
            return shard, {}
        group = shard.groups.get(group_id) or Group(group_id)
        error = validate_offset_commit(group, CommitRequest(0, member_id, group_instance_id, generation_id, (), 8))
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
        tp = TopicPartition(OFFSETS_TOPIC, shard.partition)
        result = await self.manager.produce(tp, batch, -1, self.config.commit_timeout_ms, internal_topics_allowed=True)
        stored = store_error(result.error)
        if stored == ErrorCode.NONE and self._shards.get(shard.partition) is shard:
            shard.txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)
        return ErrorCode.NONE, {**{key: stored for key, _ in offsets}, **refused}

    def unstable_offsets(self, group_id: str) -> set[TopicPartitionKey]:
        """The group's partitions with a transactional commit awaiting its marker (Kafka's UNSTABLE_OFFSET_COMMIT)."""
        shard = self._shard_for(group_id)
        if isinstance(shard, ErrorCode):
            return set()
        return {key for held in shard.txn_offsets.values() for key in held.get(group_id, {})}

    def on_txn_marker(self, tp: TopicPartition, marker: EndTxnMarker) -> None:
        """A transaction's marker is in a __consumer_offsets partition: its offset commits there take effect or go."""
        shard = self._shards.get(tp.partition) if tp.topic == OFFSETS_TOPIC else None
        if shard is None or marker.producer_id not in shard.txn_offsets:
            return
        done = complete(shard.txn_offsets, shard.groups, marker.producer_id, marker.commit)
        shard.groups.update(done.groups)
        for fields in done.events:
            self._log.info("txn_offsets_completed", partition=tp.partition, **fields)

    # ---- timers ----

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.tick()
            except Exception:  # a bug in one tick must not stop every later one
                self._log.exception("group_coordinator_tick_failed")

    def _sync_all(self) -> None:
        led = {tp.partition for tp in self.manager.replicas if tp.topic == OFFSETS_TOPIC}
        for partition in led | set(self._shards):
            self._sync_shard(partition)

    def tick(self) -> None:
        self._sync_all()
        now = monotonic_ms()
        for shard in list(self._shards.values()):
            if not shard.loaded:
                continue
            for group in list(shard.groups.values()):
                step = expire(group, now, self.config.group)
                if step.effects or step.group is not group:
                    self._apply(shard, step)
            self._tick_consumer_groups(shard, now)
        self._maybe_expire_offsets(now)

    def _maybe_expire_offsets(self, now: int) -> None:
        """Every offsets.retention.check.interval.ms (the first check one interval after start)."""
        if self._next_expiry_check_ms is None:
            self._next_expiry_check_ms = now + self.config.offsets_retention_check_interval_ms
        if now < self._next_expiry_check_ms:
            return
        self._next_expiry_check_ms = now + self.config.offsets_retention_check_interval_ms
        clock = Clock(now, wall_ms())
        for shard in list(self._shards.values()):
            if shard.loaded:
                self._expire_shard_offsets(shard, clock)

    def _expire_shard_offsets(self, shard: OffsetsShard, clock: Clock) -> None:
        in_transaction: dict[str, set[TopicPartitionKey]] = {}
        for held in shard.txn_offsets.values():
            for group_id, offsets in held.items():
                in_transaction.setdefault(group_id, set()).update(offsets)
        for group_id, group in list(shard.groups.items()):
            consumer = shard.consumer_groups.get(group_id)
            scope = ExpiryScope(
                self.config.offsets_retention_ms,
                consumer_group_topics(consumer) if consumer is not None else None,
                frozenset(in_transaction.get(group_id, ())),
            )
            step = expire_offsets(group, clock, scope, next(self._ids))
            if step.effects and self._shards.get(shard.partition) is shard:
                self._apply(shard, step)

    def _tick_consumer_groups(self, shard: OffsetsShard, now: int) -> None:
        if not shard.consumer_groups:
            return
        topics, topic_ids = self.topic_partitions(), self.topic_ids()
        for group_id, group in list(shard.consumer_groups.items()):
            step = consumer_groups.tick(group, topics, topic_ids, self.config.consumer, now)
            if step.events or step.group is not group:
                self._store_consumer_group(shard, group_id, step.group, step.events)
            if step.records and self._shards.get(shard.partition) is shard:
                self._write_consumer_records(shard, step.records)
