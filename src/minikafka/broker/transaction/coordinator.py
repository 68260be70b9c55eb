"""The transaction coordinator's shell, beside the group coordinator and built on the same coordinator runtime: it
runs the pure core (`transaction.core`) on each request and timer tick for the transactional ids of the
__transaction_state partitions this broker leads, and carries out its effects: answers, acks=all writes of states,
markers through the marker channel.

The runtime loads a partition's transactional ids from its log when this broker becomes its leader (requests get
COORDINATOR_LOAD_IN_PROGRESS meanwhile) and drops them when it stops leading (NOT_COORDINATOR). A transaction loaded
in PrepareCommit or PrepareAbort has its markers written again, so a coordinator failover finishes what the old
coordinator decided. The coordinator epoch stamped on markers is the partition's leader epoch."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.coordinator_runtime.internal_topic import CoordinatorLookup, InternalTopicSpec, partition_for
from minikafka.broker.coordinator_runtime.interval import IntervalCheck
from minikafka.broker.coordinator_runtime.runtime import CoordinatorRuntime, RuntimeConfig
from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.transaction import core
from minikafka.broker.transaction.core import (
    Reply,
    RetryCompletion,
    TxnConfig,
    TxnEvent,
    TxnStep,
    WriteMarkers,
    WriteState,
)
from minikafka.broker.transaction.id_expiry import WriteTombstones, expire_ids, tombstones_written
from minikafka.broker.transaction.markers import MarkerChannel
from minikafka.broker.transaction.records import encode_key, encode_value, tombstone_batch
from minikafka.broker.transaction.shard import TxnReplay, TxnShard
from minikafka.broker.transaction.state import TxnMetadata
from minikafka.common.clock import monotonic_ms, wall_ms
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import Record, build_batch

TRANSACTION_STATE_TOPIC = "__transaction_state"
MARKER_RETRY_S = 1.0


@dataclass(frozen=True)
class TxnCoordinatorConfig:
    core: TxnConfig
    num_partitions: int  # transaction.state.log.num.partitions
    replication_factor: int  # transaction.state.log.replication.factor
    min_isr: int  # transaction.state.log.min.isr
    segment_bytes: int  # transaction.state.log.segment.bytes
    abort_check_interval_ms: int  # transaction.abort.timed.out.transaction.cleanup.interval.ms
    write_timeout_ms: int = 5000  # a state write waits this long for the ISR (Kafka: request.timeout.ms)
    id_expiration_ms: int = 604800000  # transactional.id.expiration.ms
    id_expiry_check_interval_ms: int = 3600000  # transaction.remove.expired.transaction.cleanup.interval.ms


def txn_coordinator_config(config: BrokerConfig) -> TxnCoordinatorConfig:
    return TxnCoordinatorConfig(
        TxnConfig(config.transaction_max_timeout_ms),
        config.transaction_state_log_num_partitions,
        config.transaction_state_log_replication_factor,
        config.transaction_state_log_min_isr,
        config.transaction_state_log_segment_bytes,
        config.transaction_abort_timed_out_transaction_cleanup_interval_ms,
        id_expiration_ms=config.transactional_id_expiration_ms,
        id_expiry_check_interval_ms=config.transaction_remove_expired_transaction_cleanup_interval_ms,
    )


def runtime_config(config: TxnCoordinatorConfig) -> RuntimeConfig:
    # Kafka's, enforced: compacted (each id's latest state kept, an expired id's tombstone removing it),
    # uncompressed, never an unclean leader.
    configs = {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "unclean.leader.election.enable": "false",
        "min.insync.replicas": str(config.min_isr),
        "segment.bytes": str(config.segment_bytes),
    }
    topic = InternalTopicSpec(
        TRANSACTION_STATE_TOPIC,
        config.num_partitions,
        config.replication_factor,
        configs,
        "transaction_state_topic_creation_failed",
    )
    return RuntimeConfig(topic, "transaction_coordinator", config.write_timeout_ms)


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
        replay = partial(TxnReplay, resume=self._resume)
        self.runtime: CoordinatorRuntime[TxnShard, Reply] = CoordinatorRuntime(
            manager, controller, TxnShard, replay, runtime_config(config)
        )
        self._last_abort_check_ms = 0
        self._id_expiry = IntervalCheck(config.id_expiry_check_interval_ms)
        self._log = structlog.get_logger()

    def start(self) -> None:
        self.runtime.start(self.tick)

    async def stop(self) -> None:
        await self.runtime.stop()
        await self.markers.close()

    # ---- where a transactional id lives ----

    def find_coordinator(self, transactional_id: str) -> CoordinatorLookup:
        return self.runtime.topic.find_coordinator(transactional_id)

    # ---- the APIs ----

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None) -> Reply:
        shard = self.runtime.shard_for(transactional_id)
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
        self,
        transactional_id: str,
        producer_id: int,
        epoch: int,
        partitions: list[TopicPartitionKey],
        version: int = 0,
    ) -> Reply:
        """`version` 2: a broker adds them for a producer of transaction version 2."""
        return await self._run(
            transactional_id,
            lambda metadata, request_id, now: core.add_partitions(
                metadata, producer_id, epoch, partitions, request_id, now, version
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
        shard = self.runtime.shard_for(transactional_id)
        if isinstance(shard, ErrorCode):
            return {partition: shard for partition in partitions}
        return core.verify_partitions(shard.txns.get(transactional_id), producer_id, epoch, partitions)

    async def end_txn(
        self, transactional_id: str, producer_id: int, epoch: int, commit: bool, version: int = 0
    ) -> Reply:
        """`version`: the producer's transaction version (2 for EndTxn v5: the epoch is bumped)."""
        shard = self.runtime.shard_for(transactional_id)
        fresh = -1
        if not isinstance(shard, ErrorCode) and core.end_txn_needs_new_producer_id(
            shard.txns.get(transactional_id), version
        ):
            try:
                fresh = await self._allocate()
            except KafkaError as error:
                return Reply(0, error.code)
        return await self._run(
            transactional_id,
            lambda metadata, request_id, now: core.end_txn(
                metadata, producer_id, epoch, commit, request_id, now, version, fresh
            ),
        )

    def describe(self, transactional_id: str) -> TxnMetadata | ErrorCode:
        shard = self.runtime.shard_for(transactional_id)
        if isinstance(shard, ErrorCode):
            return shard
        return shard.txns.get(transactional_id) or ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

    def listed(self) -> list[TxnMetadata] | ErrorCode:
        shards = self.runtime.shards_if_loaded()
        if isinstance(shards, ErrorCode):
            return shards
        return [metadata for shard in shards for metadata in shard.txns.values()]

    # ---- running the core ----

    def _run(
        self, transactional_id: str, operation: Callable[[TxnMetadata | None, int, int], TxnStep]
    ) -> asyncio.Future[Reply]:

        def apply(shard: TxnShard, request_id: int) -> None:
            self._apply(shard, transactional_id, operation(shard.txns.get(transactional_id), request_id, wall_ms()))

        return self.runtime.run(transactional_id, Reply, apply)

    def _apply(self, shard: TxnShard, transactional_id: str, step: TxnStep) -> None:
        if step.metadata is not None:
            shard.txns[transactional_id] = step.metadata
        for effect in step.effects:
            if isinstance(effect, Reply):
                self.runtime.answer(effect.request_id, effect)
            elif isinstance(effect, WriteState):
                self._write(shard, effect)
            elif isinstance(effect, WriteMarkers):
                self.runtime.spawn(self._send_markers(shard, transactional_id, effect))
            elif isinstance(effect, TxnEvent):
                self._log.info(effect.name, **effect.fields)
            elif isinstance(effect, RetryCompletion):
                self.runtime.spawn(self._complete_later(shard, transactional_id))

    def _resume(self, shard: TxnShard) -> None:
        """A loaded transaction in PrepareCommit or PrepareAbort has its markers written again."""
        for transactional_id, metadata in list(shard.txns.items()):
            self._apply(shard, transactional_id, core.resume(metadata))

    def _write(self, shard: TxnShard, write: WriteState) -> None:
        target = write.target
        batch = build_batch([Record(encode_value(target), encode_key(target.transactional_id), wall_ms())])
        produced = self.runtime.write(shard, batch)
        produced.add_done_callback(lambda done: self._written(shard, write, done))

    def _written(self, shard: TxnShard, write: WriteState, done: asyncio.Future[ProduceResult]) -> None:
        if not self.runtime.is_current(shard):
            return  # unloaded: its waiting requests were answered NOT_COORDINATOR
        metadata = shard.txns.get(write.target.transactional_id)
        if metadata is None:
            return
        error = done.result().error if not done.cancelled() else ErrorCode.REQUEST_TIMED_OUT
        self._apply(shard, metadata.transactional_id, core.written(metadata, write.target, write.request_id, error))

    async def _send_markers(self, shard: TxnShard, transactional_id: str, markers: WriteMarkers) -> None:
        marker = EndTxnMarker(
            markers.producer_id, markers.producer_epoch, markers.commit, shard.leader_epoch, markers.transaction_version
        )
        done = False
        while self.runtime.is_current(shard):
            try:
                done = await self.markers.write(marker, markers.partitions, lambda: self.runtime.is_current(shard))
                break
            except Exception:  # a bug must not leave the transaction undecided for good: log it, try again
                self._log.exception("transaction_markers_failed", transactional_id=transactional_id)
                await asyncio.sleep(MARKER_RETRY_S)
        metadata = shard.txns.get(transactional_id)
        if done and self.runtime.is_current(shard) and metadata is not None:
            self._apply(shard, transactional_id, core.markers_written(metadata, wall_ms()))

    async def _complete_later(self, shard: TxnShard, transactional_id: str) -> None:
        await asyncio.sleep(MARKER_RETRY_S)
        metadata = shard.txns.get(transactional_id)
        if self.runtime.is_current(shard) and metadata is not None:
            self._apply(shard, transactional_id, core.markers_written(metadata, wall_ms()))

    # ---- timers ----

    def tick(self) -> None:
        self.runtime.sync_all()
        now = monotonic_ms()
        if now - self._last_abort_check_ms >= self.config.abort_check_interval_ms:
            self._last_abort_check_ms = now
            self._abort_timed_out()
        self._maybe_expire_ids(now)

    def _abort_timed_out(self) -> None:
        for shard in self.runtime.loaded_shards():
            for transactional_id, metadata in list(shard.txns.items()):
                step = core.expire(metadata, wall_ms())
                if step.effects:
                    self._apply(shard, transactional_id, step)

    def _maybe_expire_ids(self, now: int) -> None:
        """Every transaction.remove.expired.transaction.cleanup.interval.ms (the first check one interval after
        start)."""
        if not self._id_expiry.due(now):
            return
        for shard in self.runtime.loaded_shards():
            expiry = expire_ids(shard.txns, wall_ms(), self.config.id_expiration_ms, self.runtime.new_request_id())
            if expiry.write is not None:
                shard.txns.update(expiry.dying)
                self._write_tombstones(shard, expiry.write)

    def _write_tombstones(self, shard: TxnShard, write: WriteTombstones) -> None:
        """The tombstones go in one batch, acks=all; the ids leave memory once it is stored."""
        produced = self.runtime.write(shard, tombstone_batch(write.transactional_ids, wall_ms()))
        produced.add_done_callback(lambda done: self._tombstones_written(shard, write, done))

    def _tombstones_written(self, shard: TxnShard, write: WriteTombstones, done: asyncio.Future[ProduceResult]) -> None:
        if not self.runtime.is_current(shard):
            return  # unloaded: the next leader loads the log, tombstones and all
        error = done.result().error if not done.cancelled() else ErrorCode.REQUEST_TIMED_OUT
        outcome = tombstones_written(shard.txns, write, shard.partition, error)
        shard.txns.update(outcome.kept)
        for transactional_id in outcome.removed:
            del shard.txns[transactional_id]
        self._log.info(outcome.event.name, **outcome.event.fields)
