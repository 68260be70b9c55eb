"""The transaction coordinator's shell, beside the group coordinator and built the same way: it owns the
__transaction_state partitions this broker leads, runs the pure core (`transaction.core`) on each request and
timer tick, and carries out its effects: answers, acks=all writes of states, markers through the marker channel.

A partition's transactional ids are loaded from its log when this broker becomes its leader (requests get
COORDINATOR_LOAD_IN_PROGRESS meanwhile) and dropped when it stops leading (NOT_COORDINATOR). A transaction loaded
in PrepareCommit or PrepareAbort has its markers written again, so a coordinator failover finishes what the old
coordinator decided. The coordinator epoch stamped on markers is the partition's leader epoch."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.group.coordinator import CoordinatorLookup, partition_for
from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import ReplicaManager, answered
from minikafka.broker.transaction import core
from minikafka.broker.transaction.core import Reply, TxnConfig, TxnEvent, TxnStep, WriteMarkers, WriteState
from minikafka.broker.transaction.markers import MarkerChannel
from minikafka.broker.transaction.records import (
    TxnRecordFormatError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from minikafka.broker.transaction.state import TxnMetadata
from minikafka.common.clock import monotonic_ms, wall_ms
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import Record, build_batch, iter_batches
from minikafka.pb import controller_pb2

TRANSACTION_STATE_TOPIC = "__transaction_state"
TICK_S = 0.1
LOAD_CHUNK_BYTES = 1048576
MARKER_RETRY_S = 1.0


@dataclass(frozen=True)
class TxnCoordinatorConfig:
    core: TxnConfig
    num_partitions: int  # transaction.state.log.num.partitions
    replication_factor: int  # transaction.state.log.replication.factor
    min_isr: int  # transaction.state.log.min.isr
    abort_check_interval_ms: int  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    write_timeout_ms: int = 5000  # a state write waits this long for the ISR (Kafka: request.timeout.ms)


def txn_coordinator_config(config: BrokerConfig) -> TxnCoordinatorConfig:
    return TxnCoordinatorConfig(
        TxnConfig(config.transaction_max_timeout_ms),
        config.transaction_state_log_num_partitions,
        config.transaction_state_log_replication_factor,
        config.transaction_state_log_min_isr,
        config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
    )


@dataclass
class TxnShard:
    """The transactional ids of one __transaction_state partition while this broker leads it at `leader_epoch`."""

    partition: int
    leader_epoch: int
    loaded: bool = False
    txns: dict[str, TxnMetadata] = field(default_factory=dict)


class TransactionCoordinator:
    def __init__(
        self,
        manager: ReplicaManager,
        controller: ControllerClient,
        config: TxnCoordinatorConfig,
        markers: MarkerChannel,
        allocate_producer_id: Callable[[], Awaitable[int]],
    ) -> None:
        self.manager = manager
        self.controller = controller
        self.config = config
        self.markers = markers
        self._allocate = allocate_producer_id
        self._shards: dict[int, TxnShard] = {}
        self._waiting: dict[int, tuple[int, asyncio.Future[Reply]]] = {}
        self._ids = itertools.count(1)
        self._tasks: set[asyncio.Task[None]] = set()
        self._creating: asyncio.Task[None] | None = None
        self._last_abort_check_ms = 0
        self._log = structlog.get_logger()

    def start(self) -> None:
        self._spawn(self._tick_forever())

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.markers.close()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- where a transactional id lives ----

    def _partitions(self) -> int | None:
        topic = self.manager.metadata.image.topics_by_name.get(TRANSACTION_STATE_TOPIC)
        return len(topic.partitions) if topic is not None and topic.partitions else None

    def find_coordinator(self, transactional_id: str) -> CoordinatorLookup:
        partitions = self._partitions()
        if partitions is None:
            self._create_topic()
            message = f"{TRANSACTION_STATE_TOPIC} is being created"
            return CoordinatorLookup(ErrorCode.COORDINATOR_NOT_AVAILABLE, message=message)
        topic = self.manager.metadata.image.topics_by_name[TRANSACTION_STATE_TOPIC]
        registration = topic.partitions.get(partition_for(transactional_id, partitions))
        if registration is None or registration.leader < 0:
            return CoordinatorLookup(ErrorCode.COORDINATOR_NOT_AVAILABLE, message="the partition has no leader")
        return CoordinatorLookup(ErrorCode.NONE, registration.leader)

    def _create_topic(self) -> None:
        if self._creating is None or self._creating.done():
            self._creating = asyncio.ensure_future(self._create())

    async def _create(self) -> None:
        topic = controller_pb2.CreateTopicsRequest.CreatableTopic(
            name=TRANSACTION_STATE_TOPIC,
            num_partitions=self.config.num_partitions,
            replication_factor=self.config.replication_factor,
            configs={
                "retention.ms": "-1",
                "retention.bytes": "-1",
                "min.insync.replicas": str(self.config.min_isr),
            },
        )
        response = await self.controller.call("CreateTopics", controller_pb2.CreateTopicsRequest(topics=[topic]))
        for result in response.topics if response is not None else ():
            error = ErrorCode.of(result.error_code)
            if error not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                self._log.warning(
                    "transaction_state_topic_creation_failed", error=error.name, error_message=result.error_message
                )

    def _shard_for(self, transactional_id: str) -> TxnShard | ErrorCode:
        partitions = self._partitions()
        if partitions is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        shard = self._sync_shard(partition_for(transactional_id, partitions))
        if shard is None:
            return ErrorCode.NOT_COORDINATOR
        return shard if shard.loaded else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    def _sync_shard(self, partition: int) -> TxnShard | None:
        replica = self.manager.replicas.get(TopicPartition(TRANSACTION_STATE_TOPIC, partition))
        shard = self._shards.get(partition)
        if replica is None or replica.leader is None or not self.manager.serving():
            if shard is not None:
                self._unload(shard, "no longer the leader")
            return None
        if shard is not None and shard.leader_epoch == replica.leader_epoch:
            return shard
        if shard is not None:
            self._unload(shard, f"new leader epoch {replica.leader_epoch}")
        shard = self._shards[partition] = TxnShard(partition, replica.leader_epoch)
        self._spawn(self._load(shard))
        return shard

    def _current(self, shard: TxnShard) -> bool:
        return self._shards.get(shard.partition) is shard

    # ---- loading and unloading ----

    async def _load(self, shard: TxnShard) -> None:
        started = monotonic_ms()
        replica = self.manager.replicas.get(TopicPartition(TRANSACTION_STATE_TOPIC, shard.partition))
        if replica is None:
            return
        txns: dict[str, TxnMetadata] = {}
        offset, end = replica.log.log_start_offset, replica.log.log_end_offset
        while offset < end and self._current(shard):
            try:
                data = replica.log.read(offset, LOAD_CHUNK_BYTES, max_offset=end)
            except KafkaError as error:
                self._log.warning("transaction_coordinator_load_failed", partition=shard.partition, error=str(error))
                return
            if not data:
                break
            for batch in iter_batches(data):
                offset = batch.next_offset
                for record in batch.records() if not batch.is_control else ():
                    self._load_record(txns, record, shard.partition)
            await asyncio.sleep(0)  # a long log does not hold up the broker's other work
        if not self._current(shard):
            return
        shard.txns, shard.loaded = txns, True
        self._log.info(
            "transaction_coordinator_loaded",
            partition=shard.partition,
            leader_epoch=shard.leader_epoch,
            transactional_ids=len(txns),
            load_ms=monotonic_ms() - started,
        )
        for transactional_id, metadata in txns.items():
            self._apply(shard, transactional_id, core.resume(metadata))

    def _load_record(self, txns: dict[str, TxnMetadata], record: Record, partition: int) -> None:
        try:
            transactional_id = decode_key(record.key)
            if record.value is None:
                txns.pop(transactional_id, None)
            else:
                txns[transactional_id] = decode_value(transactional_id, record.value)
        except (TxnRecordFormatError, UnicodeDecodeError) as error:
            self._log.warning(
                "transaction_state_record_skipped", partition=partition, offset=record.offset, reason=str(error)
            )

    def _unload(self, shard: TxnShard, reason: str) -> None:
        del self._shards[shard.partition]
        for request_id, (partition, future) in list(self._waiting.items()):
            if partition == shard.partition:
                del self._waiting[request_id]
                if not future.done():
                    future.set_result(Reply(request_id, ErrorCode.NOT_COORDINATOR))
        self._log.info(
            "transaction_coordinator_unloaded",
            partition=shard.partition,
            leader_epoch=shard.leader_epoch,
            transactional_ids=len(shard.txns),
            reason=reason,
        )

    # ---- the APIs ----

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None) -> Reply:
        shard = self._shard_for(transactional_id)
        fresh = -1
        if not isinstance(shard, ErrorCode) and core.needs_new_producer_id(shard.txns.get(transactional_id)):
            try:
                fresh = await self._allocate()
            except KafkaError as error:
                return Reply(0, error.code)
        return await self._run(
            transactional_id,
            lambda metadata, request_id, now: core.init_producer_id(
                metadata, transactional_id, timeout_ms, expected, fresh, request_id, now, self.config.core
            ),
        )

    async def add_partitions(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: list[TopicPartitionKey]
    ) -> Reply:
        return await self._run(
            transactional_id,
            lambda metadata, request_id, now: core.add_partitions(
                metadata, producer_id, epoch, partitions, request_id, now
            ),
        )

    async def add_offsets(self, transactional_id: str, producer_id: int, epoch: int, group_id: str) -> Reply:
        """AddOffsetsToTxn: the group's __consumer_offsets partition joins the transaction."""
        offsets = self.manager.metadata.image.topics_by_name.get("__consumer_offsets")
        if offsets is None or not offsets.partitions:
            return Reply(0, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        partition = TopicPartitionKey("__consumer_offsets", partition_for(group_id, len(offsets.partitions)))
        return await self.add_partitions(transactional_id, producer_id, epoch, [partition])

    def verify(
        self, transactional_id: str, producer_id: int, epoch: int, partitions: list[TopicPartitionKey]
    ) -> dict[TopicPartitionKey, ErrorCode]:
        shard = self._shard_for(transactional_id)
        if isinstance(shard, ErrorCode):
            return {partition: shard for partition in partitions}
        return core.verify_partitions(shard.txns.get(transactional_id), producer_id, epoch, partitions)

    async def end_txn(self, transactional_id: str, producer_id: int, epoch: int, commit: bool) -> Reply:
        return await self._run(
            transactional_id,
            lambda metadata, request_id, now: core.end_txn(metadata, producer_id, epoch, commit, request_id, now),
        )

    def describe(self, transactional_id: str) -> TxnMetadata | ErrorCode:
        shard = self._shard_for(transactional_id)
        if isinstance(shard, ErrorCode):
            return shard
        return shard.txns.get(transactional_id) or ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

    def listed(self) -> list[TxnMetadata] | ErrorCode:
        for partition in {tp.partition for tp in self.manager.replicas if tp.topic == TRANSACTION_STATE_TOPIC}:
            self._sync_shard(partition)
        if any(not shard.loaded for shard in self._shards.values()):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return [metadata for shard in self._shards.values() for metadata in shard.txns.values()]

    # ---- running the core ----

    def _run(
        self, transactional_id: str, operation: Callable[[TxnMetadata | None, int, int], TxnStep]
    ) -> asyncio.Future[Reply]:
        shard = self._shard_for(transactional_id)
        if isinstance(shard, ErrorCode):
            return answered(Reply(0, shard))
        request_id = next(self._ids)
        future: asyncio.Future[Reply] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = (shard.partition, future)
        self._apply(shard, transactional_id, operation(shard.txns.get(transactional_id), request_id, wall_ms()))
        return future

    def _apply(self, shard: TxnShard, transactional_id: str, step: TxnStep) -> None:
        if step.metadata is not None:
            shard.txns[transactional_id] = step.metadata
        for effect in step.effects:
            if isinstance(effect, Reply):
                waiting = self._waiting.pop(effect.request_id, None)
                if waiting is not None and not waiting[1].done():
                    waiting[1].set_result(effect)
            elif isinstance(effect, WriteState):
                self._write(shard, effect)
            elif isinstance(effect, WriteMarkers):
                self._spawn(self._send_markers(shard, transactional_id, effect))
            elif isinstance(effect, TxnEvent):
                self._log.info(effect.name, **effect.fields)

    def _write(self, shard: TxnShard, write: WriteState) -> None:
        target = write.target
        batch = build_batch([Record(encode_value(target), encode_key(target.transactional_id), wall_ms())])
        tp = TopicPartition(TRANSACTION_STATE_TOPIC, shard.partition)
        produced = self.manager.produce(tp, batch, -1, self.config.write_timeout_ms, internal_topics_allowed=True)
        produced.add_done_callback(lambda done: self._written(shard, write, done))

    def _written(self, shard: TxnShard, write: WriteState, done: asyncio.Future[ProduceResult]) -> None:
        if not self._current(shard):
            return  # unloaded: its waiting requests were answered NOT_COORDINATOR
        metadata = shard.txns.get(write.target.transactional_id)
        if metadata is None:
            return
        error = done.result().error if not done.cancelled() else ErrorCode.REQUEST_TIMED_OUT
        self._apply(shard, metadata.transactional_id, core.written(metadata, write.target, write.request_id, error))

    async def _send_markers(self, shard: TxnShard, transactional_id: str, markers: WriteMarkers) -> None:
        marker = EndTxnMarker(markers.producer_id, markers.producer_epoch, markers.commit, shard.leader_epoch)
        done = False
        while self._current(shard):
            try:
                done = await self.markers.write(marker, markers.partitions, lambda: self._current(shard))
                break
            except Exception:  # a bug must not leave the transaction undecided for good: log it, try again
                self._log.exception("transaction_markers_failed", transactional_id=transactional_id)
                await asyncio.sleep(MARKER_RETRY_S)
        metadata = shard.txns.get(transactional_id)
        if done and self._current(shard) and metadata is not None:
            self._apply(shard, transactional_id, core.markers_written(metadata, wall_ms()))

    # ---- timers ----

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                self.tick()
            except Exception:  # a bug in one tick must not stop every later one
                self._log.exception("transaction_coordinator_tick_failed")

    def tick(self) -> None:
        for partition in {tp.partition for tp in self.manager.replicas if tp.topic == TRANSACTION_STATE_TOPIC} | set(
            self._shards
        ):
            self._sync_shard(partition)
        now = monotonic_ms()
        if now - self._last_abort_check_ms < self.config.abort_check_interval_ms:
            return
        self._last_abort_check_ms = now
        for shard in list(self._shards.values()):
            if shard.loaded:
                for transactional_id, metadata in list(shard.txns.items()):
                    step = core.expire(metadata, wall_ms())
                    if step.effects:
                        self._apply(shard, transactional_id, step)
