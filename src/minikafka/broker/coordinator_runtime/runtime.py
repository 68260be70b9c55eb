"""The shard map of a coordinator: one shard per partition of its internal topic that this broker leads, kept in
step with the replica manager on every request and timer tick.

A shard is loaded from the partition's log when this broker becomes its leader (its keys get
COORDINATOR_LOAD_IN_PROGRESS meanwhile) and dropped when it stops leading (NOT_COORDINATOR; held requests are
answered so). A new leader epoch reloads: the log is the truth, not what this broker remembered. A load that a
newer leader epoch superseded stops reading and puts nothing in place."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import structlog

from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.coordinator_runtime.internal_topic import InternalTopic, InternalTopicSpec, partition_for
from minikafka.broker.coordinator_runtime.loader import LOAD_CHUNK_BYTES, Replay, replay_log
from minikafka.broker.coordinator_runtime.pending import Failure, Held, PendingRequests
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import ReplicaManager, answered
from minikafka.common.clock import monotonic_ms
from minikafka.common.errors import ErrorCode

TICK_S = 0.1  # each coordinator's timers (session timeouts, transaction timeouts) are checked this often


@dataclass
class CoordinatorShard:
    """What a coordinator holds of one partition while this broker leads it at `leader_epoch`."""

    partition: int
    leader_epoch: int
    loaded: bool = False

    def unloaded_counts(self) -> Mapping[str, int]:
        """What the unloaded event reports of the shard's state."""
        return {}


S = TypeVar("S", bound=CoordinatorShard)
T = TypeVar("T")


@dataclass(frozen=True)
class RuntimeConfig:
    topic: InternalTopicSpec
    # The events are `<event_prefix>_loaded`, `_unloaded`, `_load_failed` and `_tick_failed`.
    event_prefix: str
    write_timeout_ms: int  # a write to the internal topic waits this long for the ISR (acks=all)
    load_chunk_bytes: int = LOAD_CHUNK_BYTES


class CoordinatorRuntime(Generic[S, T]):
    """The shards of one internal topic (type S) and the requests held on them until answered (type T).
    `new_shard(partition, leader_epoch)` makes a coordinator's empty shard, `new_replay(shard)` what reads its log."""

    def __init__(
        self,
        manager: ReplicaManager,
        controller: ControllerClient,
        new_shard: Callable[[int, int], S],
        new_replay: Callable[[S], Replay],
        config: RuntimeConfig,
        on_loaded: Callable[[S], None] | None = None,
    ) -> None:
        """`on_loaded`: told of each shard once it is loaded, after the loaded event."""
        self.manager = manager
        self._on_loaded = on_loaded
        self.topic = InternalTopic(manager, controller, config.topic)
        self.config = config
        self._new_shard = new_shard
        self._new_replay = new_replay
        self._shards: dict[int, S] = {}
        self._pending: PendingRequests[T] = PendingRequests()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False
        self._log = structlog.get_logger()

    # ---- background work ----

    def start(self, tick: Callable[[], None]) -> None:
        """Runs the coordinator's `tick` every TICK_S until `stop`, and syncs the shards after each metadata delta."""
        self.spawn(self._tick_forever(tick))
        self.manager.on_delta_applied(self._sync_after_delta)

    async def stop(self) -> None:
        self._stopped = True
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def spawn(self, work: Awaitable[None]) -> None:
        """Runs `work` in the background, cancelled by `stop`."""
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _tick_forever(self, tick: Callable[[], None]) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            try:
                tick()
            except Exception:  # a bug in one tick must not stop every later one
                self._log.exception(f"{self.config.event_prefix}_tick_failed")

    def _sync_after_delta(self) -> None:
        """Kafka's onElection and onResignation: a partition this broker came to lead starts loading as soon as the
        delta is applied, not at the next tick, so the first requests after an election wait for the load only."""
        if self._stopped:
            return
        try:
            self.sync_all()
        except Exception:  # the replica manager calls this amid its metadata: a bug here must not stop that
            self._log.exception(f"{self.config.event_prefix}_sync_failed")

    # ---- where a key lives ----

    def shard_for(self, key: str) -> S | ErrorCode:
        """The loaded shard of the key's partition, or why this broker cannot coordinate the key now."""
        partitions = self.topic.partitions()
        if partitions is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        shard = self.sync(partition_for(key, partitions))
        if shard is None:
            return ErrorCode.NOT_COORDINATOR
        return shard if shard.loaded else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS

    def sync(self, partition: int) -> S | None:
        """The shard of a partition this broker leads now, (re)loading it on a new leader epoch."""
        replica = self.manager.replicas.get(TopicPartition(self.topic.name, partition))
        shard = self._shards.get(partition)
        if replica is None or replica.leader is None or not self.manager.serving():
            if shard is not None:
                self.unload(shard, "no longer the leader")
            return None
        if shard is not None and shard.leader_epoch == replica.leader_epoch:
            return shard
        if shard is not None:
            self.unload(shard, f"new leader epoch {replica.leader_epoch}")
        shard = self._shards[partition] = self._new_shard(partition, replica.leader_epoch)
        self.spawn(self._load(shard))
        return shard

    def sync_all(self) -> None:
        """Loads the partitions this broker hosts and leads, unloads those it no longer does."""
        # The topic's partitions in the metadata, not every replica here: thousands of them, every tick.
        topic = self.manager.metadata.image.topics_by_name.get(self.topic.name)
        indexes = topic.partitions.keys() if topic is not None else ()
        hosted = {index for index in indexes if TopicPartition(self.topic.name, index) in self.manager.replicas}
        for partition in hosted | set(self._shards):
            self.sync(partition)

    def shards_if_loaded(self) -> list[S] | ErrorCode:
        """Every shard, synced, for the List APIs; COORDINATOR_LOAD_IN_PROGRESS while one still loads."""
        self.sync_all()
        if any(not shard.loaded for shard in self._shards.values()):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return list(self._shards.values())

    def loaded_shards(self) -> list[S]:
        """The loaded shards as they stand, without syncing."""
        return [shard for shard in self._shards.values() if shard.loaded]

    def shard(self, partition: int) -> S | None:
        """The partition's shard as it stands, loaded or not, without syncing."""
        return self._shards.get(partition)

    def is_current(self, shard: S) -> bool:
        """Whether `shard` is still the partition's: not unloaded, not replaced by a newer leader epoch's."""
        return self._shards.get(shard.partition) is shard

    # ---- loading and unloading ----

    async def _load(self, shard: S) -> None:
        started = monotonic_ms()
        replica = self.manager.replicas.get(TopicPartition(self.topic.name, shard.partition))
        if replica is None:
            return
        replay = self._new_replay(shard)
        read = await replay_log(replica.log, replay, lambda: self.is_current(shard), self.config.load_chunk_bytes)
        if read.error is not None:
            event = f"{self.config.event_prefix}_load_failed"
            self._log.warning(event, partition=shard.partition, error=str(read.error))
            return
        if not self.is_current(shard):
            return
        counts = replay.install()
        shard.loaded = True
        self._log.info(
            f"{self.config.event_prefix}_loaded",
            partition=shard.partition,
            leader_epoch=shard.leader_epoch,
            **counts,
            load_ms=monotonic_ms() - started,
        )
        if self._on_loaded is not None:
            self._on_loaded(shard)

    def unload(self, shard: S, reason: str) -> None:
        """Drops the shard; the requests held on its partition are answered NOT_COORDINATOR."""
        del self._shards[shard.partition]
        self._pending.fail_partition(shard.partition, ErrorCode.NOT_COORDINATOR)
        self._log.info(
            f"{self.config.event_prefix}_unloaded",
            partition=shard.partition,
            leader_epoch=shard.leader_epoch,
            **shard.unloaded_counts(),
            reason=reason,
        )

    # ---- requests and writes ----

    def run(self, key: str, failure: Failure[T], operation: Callable[[S, int], None]) -> asyncio.Future[T]:
        """Runs `operation(shard, request_id)` on the key's loaded shard; the future gives the answer `answer` sets
        for the request id, or `failure(request_id, error)` when this broker cannot coordinate the key (now or once
        the shard is unloaded before the answer)."""
        shard = self.shard_for(key)
        if isinstance(shard, ErrorCode):
            return answered(failure(0, shard))
        held: Held[T] = self._pending.hold(shard.partition, failure)
        operation(shard, held.request_id)
        return held.future

    def answer(self, request_id: int, result: T) -> None:
        self._pending.answer(request_id, result)

    def new_request_id(self) -> int:
        """An id for a core operation no request waits on (a timer's), distinct from every held request's."""
        return self._pending.new_id()

    def write(self, shard: S, batch: bytes) -> asyncio.Future[ProduceResult]:
        """Appends a batch to the shard's partition, acknowledged once the ISR has it (acks=all)."""
        tp = TopicPartition(self.topic.name, shard.partition)
        return self.manager.produce(tp, batch, -1, self.config.write_timeout_ms, internal_topics_allowed=True)
