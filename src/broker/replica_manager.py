"""The broker's replicas: leader and follower roles from metadata, Produce/Fetch on the leader, acks=all waits,
AlterPartition sending (holdable for the KIP-903 replay), and the follower fetchers.

The replication decisions live in the pure `broker.replica.partition` roles (Leader, Follower); this shell owns the
logs, the clock, the network and the waiting.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import structlog

from broker.config import BrokerConfig
from broker.controller_client import ControllerClient
from broker.log_manager import LogManager, TopicPartition
from broker.metadata_listener import MetadataDelta, MetadataListener
from broker.replica.divergence import EpochEndOffset, diverging_epoch
from broker.replica.partition import (
    AlterPartitionProposal,
    AlterPartitionResult,
    AssignEpochStartOffset,
    FailPendingProduces,
    Leader,
    PartitionConfig,
    PartitionMetadata,
    PendingExpandIsr,
    PendingShrinkIsr,
    Role,
    SendAlterPartition,
    apply_metadata,
)
from common.clock import monotonic_ms
from common.errors import ErrorCode, KafkaError
from common.purgatory import Purgatory
from minikafka_pb import controller_pb2
from storage.partition_log import PartitionLog

HWM_EVENT_INTERVAL_MS = 1000  # high_watermark_advanced is coalesced to at most one event a second per partition
ProduceOutcome = tuple[ErrorCode, int, str]  # (error, base offset, message)
T = TypeVar("T")


@dataclass
class DelayedProduce:
    """An acks=all produce waiting in the purgatory for the HWM to pass its batch (Kafka's DelayedProduce)."""

    required_offset: int  # the batch's last offset + 1
    first_offset: int
    answer: asyncio.Future[ProduceOutcome]
    expiry: asyncio.TimerHandle | None = None

    def finish(self, code: ErrorCode, message: str = "") -> None:
        if self.expiry is not None:
            self.expiry.cancel()
        if not self.answer.done():
            self.answer.set_result((code, self.first_offset, message))


@dataclass
class Replica:
    tp: TopicPartition
    topic_id: uuid.UUID
    log: PartitionLog
    role: Role  # the pure core's state for this partition: Leader while we lead, else Follower
    waiters: list[DelayedProduce] = field(default_factory=list)
    last_hwm_event_ms: int = 0

    @property
    def leader(self) -> Leader | None:
        return self.role if isinstance(self.role, Leader) else None

    @property
    def leader_id(self) -> int:
        return self.role.broker_id if isinstance(self.role, Leader) else self.role.leader_id

    @property
    def leader_epoch(self) -> int:
        return self.role.leader_epoch

    @property
    def partition_epoch(self) -> int:
        return self.role.partition_epoch


class ReplicaManager:
    def __init__(
        self,
        config: BrokerConfig,
        logs: LogManager,
        metadata: MetadataListener,
        controller: ControllerClient,
        broker_epoch: Callable[[], int],
        serving: Callable[[], bool],
    ) -> None:
        self.config = config
        self.logs = logs
        self.metadata = metadata
        self.controller = controller
        self.broker_epoch = broker_epoch
        self.serving = serving
        self.replicas: dict[TopicPartition, Replica] = {}
        self.hold_alter_partition = False
        # False until the first metadata delta after start-up catch-up: until then the image may lack topics.
        self.metadata_ready = False
        self.held: list[tuple[Replica, AlterPartitionProposal]] = []
        # Parked fetches, each its own future (awaited directly: one loop turn from a change to its answer). A
        # follower's wakes on new data, a consumer's on a HWM move (what it may read). Like Kafka's DelayedFetch, a
        # HWM move alone does not answer a follower (that would double its fetches).
        self._parked: dict[bool, Purgatory] = {True: Purgatory(), False: Purgatory()}  # key: for replicas
        self._follower_wake_scheduled = False
        self._fetchers: dict[int, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[object]] = set()
        self._eligible_epochs: tuple[object, dict[int, int]] = (None, {})
        self._log = structlog.get_logger()

    # ---- change notification (long polls) ----

    def notify(self, replicas: bool = True, consumers: bool = True) -> None:
        """Wake parked fetches: followers' (data appended, or anything else changed), consumers' (HWM moved)."""
        if replicas:
            self._parked[True].wake_all()
        if consumers:
            self._parked[False].wake_all()

    def _wake_followers_after_answer(self) -> None:
        """Wake the followers' parked fetches one loop turn later, once an acks 0/1 answer is on its way: as Kafka
        completes delayed fetches after the produce response is sent, the answer does not wait behind the fetch
        responses (acks=1 p50 at 300 requests/s: 1.2-1.5 ms with the wake first, 0.6-0.8 ms after)."""
        if not self._follower_wake_scheduled:
            self._follower_wake_scheduled = True
            asyncio.get_running_loop().call_soon(self._wake_followers)

    def _wake_followers(self) -> None:
        self._follower_wake_scheduled = False
        self.notify(consumers=False)

    async def wait_for_change(self, for_replica: bool, timeout_s: float) -> bool:
        """Park until the next `notify` that concerns this fetch (True) or the timeout (False)."""
        return await self._parked[for_replica].wait(timeout_s)

    # ---- metadata ----

    def metadata_broker_epochs(self) -> dict[int, int]:
        """Epochs of the brokers eligible for an ISR: registered, unfenced, not in controlled shutdown.

        Asked on every follower Fetch; recomputed only when the metadata image changes (images are immutable).
        """
        image = self.metadata.image
        if self._eligible_epochs[0] is not image:
            epochs = {
                broker_id: b.broker_epoch
                for broker_id, b in image.brokers.items()
                if not b.fenced and not b.in_controlled_shutdown
            }
            self._eligible_epochs = (image, epochs)
        return self._eligible_epochs[1]

    def not_hosted_error(self, tp: TopicPartition) -> ErrorCode:
        """A partition this broker does not lead: NOT_LEADER_OR_FOLLOWER (retriable) only if it exists at all, as
        Kafka's getPartitionOrError; a partition index outside the topic is UNKNOWN_TOPIC_OR_PARTITION."""
        image = self.metadata.image
        topic = image.topics_by_name.get(tp.topic)
        if topic is None or image.partition(topic.topic_id, tp.partition) is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def min_insync_replicas(self, topic: str) -> int:
        return self.metadata.image.min_insync_replicas(topic, self.config.min_insync_replicas)

    def on_metadata(self, delta: MetadataDelta) -> None:
        self.metadata_ready = True
        now = monotonic_ms()
        for topic_id, index in delta.changed_partitions:
            topic = delta.image.topic(topic_id)
            partition = delta.image.partition(topic_id, index)
            if topic is None or partition is None or self.config.node_id not in partition.replicas:
                continue
            tp = TopicPartition(topic.name, index)
            replica = self.replicas.get(tp)
            log = replica.log if replica is not None else self.logs.get_or_create(tp, topic_id, now)
            metadata = PartitionMetadata(
                partition.replicas, partition.isr, partition.leader, partition.leader_epoch, partition.partition_epoch
            )
            config = PartitionConfig(self.min_insync_replicas(tp.topic), self.config.replica_lag_time_max_ms)
            transition = apply_metadata(
                replica.role if replica is not None else None,
                str(tp),
                self.config.node_id,
                self.broker_epoch(),
                metadata,
                log.log_end_offset,
                log.high_watermark,
                config,
                now,
            )
            if transition is None:
                continue  # an older partition epoch, or nothing new (the core logged why)
            if replica is None:
                replica = self.replicas[tp] = Replica(tp, topic_id, log, transition.state)
            replica.role = transition.state
            for effect in transition.effects:
                if isinstance(effect, FailPendingProduces):
                    self._fail_waiters(replica, effect.error)
                elif isinstance(effect, AssignEpochStartOffset):
                    log.assign_epoch_start_offset(effect.leader_epoch, effect.start_offset)
            if replica.leader is not None:
                self._hwm_moved(replica, now)
            elif replica.leader_id >= 0:
                self._ensure_fetcher(replica.leader_id)
        self.notify()

    # ---- produce ----

    def produce(self, tp: TopicPartition, records: bytes, acks: int, timeout_ms: int) -> asyncio.Future[ProduceOutcome]:
        """Append as leader now, in call order (a pipelined stream relies on it); the returned future answers
        (error, base offset, message): at once, or for acks=all when the HWM passes the batch."""
        replica = self.replicas.get(tp)
        if replica is None:
            return answered((self.not_hosted_error(tp), -1, f"{tp} is not hosted here"))
        leader = replica.leader
        if leader is None or not self.serving():
            return answered(
                (ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, f"broker {self.config.node_id} does not lead {tp} now")
            )
        code = leader.check_produce(acks)
        if code != ErrorCode.NONE:
            message = f"ISR {sorted(leader.isr)} is below min.insync.replicas {leader.config.min_insync_replicas}"
            return answered((code, -1, message))
        now = monotonic_ms()
        try:
            info = replica.log.append_as_leader(records, leader.leader_epoch, now)
        except KafkaError as error:
            return answered((error.code, -1, error.message))
        replica.role, moved = leader.on_local_append(replica.log.log_end_offset, now)
        if moved:
            self._hwm_moved(replica, now)
        # Followers have data to fetch (consumers only once the HWM moves). acks=all waits for them: wake them now.
        if acks != -1:
            self._wake_followers_after_answer()
            return answered((ErrorCode.NONE, info.first_offset, ""))
        self.notify(consumers=False)
        outcome = replica.role.produce_outcome(info.last_offset + 1)
        if outcome is not None:
            return answered((outcome, info.first_offset, ""))
        loop = asyncio.get_running_loop()
        waiter = DelayedProduce(info.last_offset + 1, info.first_offset, loop.create_future())
        waiter.expiry = loop.call_later(timeout_ms / 1000, self._expire, replica, waiter)
        replica.waiters.append(waiter)
        return waiter.answer

    @staticmethod
    def _expire(replica: Replica, waiter: DelayedProduce) -> None:
        replica.waiters = [w for w in replica.waiters if w is not waiter]
        waiter.finish(ErrorCode.REQUEST_TIMED_OUT, "the HWM did not reach the batch in time")

    def _hwm_moved(self, replica: Replica, now: int) -> None:
        leader = replica.leader
        assert leader is not None
        replica.log.high_watermark = leader.high_watermark
        self.notify(replicas=False)  # consumers may read further
        still = []
        for waiter in replica.waiters:
            outcome = leader.produce_outcome(waiter.required_offset)
            if outcome is None:
                still.append(waiter)
            else:
                waiter.finish(outcome)
        replica.waiters = still
        if now - replica.last_hwm_event_ms >= HWM_EVENT_INTERVAL_MS:
            replica.last_hwm_event_ms = now
            self._log.info(
                "high_watermark_advanced",
                partition=str(replica.tp),
                high_watermark=leader.high_watermark,
                leader_epoch=leader.leader_epoch,
                log_end_offset=replica.log.log_end_offset,
            )

    def _fail_waiters(self, replica: Replica, code: ErrorCode) -> None:
        for waiter in replica.waiters:
            waiter.finish(code)
        replica.waiters = []

    # ---- follower fetches on the leader ----

    def follower_fetch(
        self,
        tp: TopicPartition,
        replica_id: int,
        replica_epoch: int,
        current_leader_epoch: int,
        fetch_offset: int,
        last_fetched_epoch: int,
        max_bytes: int,
        record_fetch: bool = True,
    ):  # noqa: ANN201
        """(error, records, hwm, diverging (epoch, end) or None). `record_fetch=False` re-reads for a Fetch that
        waited: its fetch was already counted in the follower's state when it arrived, once, as in Kafka."""
        replica = self.replicas.get(tp)
        if replica is None or replica.leader is None or not self.serving():
            return self.not_hosted_error(tp), b"", -1, None
        leader = replica.leader
        code = leader.check_current_leader_epoch(current_leader_epoch)
        if code != ErrorCode.NONE:
            return code, b"", leader.high_watermark, None
        log = replica.log
        if last_fetched_epoch >= 0:
            diverging = diverging_epoch(
                EpochEndOffset(*log.end_offset_for_epoch(last_fetched_epoch)), last_fetched_epoch, fetch_offset
            )
            if diverging is not None:
                return ErrorCode.NONE, b"", leader.high_watermark, (diverging.epoch, diverging.end_offset)
        if not record_fetch:
            return self._read_for_follower(log, fetch_offset, max_bytes, leader.high_watermark)
        now = monotonic_ms()
        decision = leader.on_follower_fetch(
            replica_id, replica_epoch, current_leader_epoch, fetch_offset, self.metadata_broker_epochs(), now
        )
        replica.role = leader = decision.state
        if decision.error != ErrorCode.NONE:
            return decision.error, b"", leader.high_watermark, None
        if decision.high_watermark_changed:
            self._hwm_moved(replica, now)
        if decision.proposal is not None:
            self._send_alter_partition(replica, decision.proposal)
        return self._read_for_follower(log, fetch_offset, max_bytes, leader.high_watermark)

    @staticmethod
    def _read_for_follower(log: PartitionLog, fetch_offset: int, max_bytes: int, hwm: int):  # noqa: ANN205
        try:
            return ErrorCode.NONE, log.read(fetch_offset, max_bytes), hwm, None
        except KafkaError as error:
            return error.code, b"", hwm, None

    def shrink_lagging_isrs(self) -> None:
        if not self.serving():
            return  # we refuse the followers' fetches now: their lag says nothing about them
        now = monotonic_ms()
        epochs = self.metadata_broker_epochs()
        for replica in self.replicas.values():
            if replica.leader is not None:
                replica.role, proposal = replica.leader.maybe_shrink_isr(now, epochs)
                if proposal is not None:
                    self._send_alter_partition(replica, proposal)

    # ---- AlterPartition ----

    def _send_alter_partition(self, replica: Replica, proposal: AlterPartitionProposal) -> None:
        if self.hold_alter_partition:
            self.held.append((replica, proposal))
            self._log.info("alter_partition_held", partition=str(replica.tp), proposed=sorted(proposal.isr))
            return
        self._spawn(self._alter_partition(replica, proposal))

    def release_alter_partition(self, keep_holding: bool = False) -> int:
        held, self.held = self.held, []
        self.hold_alter_partition = keep_holding
        for replica, proposal in held:
            self._spawn(self._alter_partition(replica, proposal))
        return len(held)

    async def _alter_partition(self, replica: Replica, proposal: AlterPartitionProposal) -> None:
        request = controller_pb2.AlterPartitionRequest(broker_id=self.config.node_id, broker_epoch=self.broker_epoch())
        topic = request.topics.add(topic_id=replica.topic_id.bytes)
        entry = topic.partitions.add(
            partition_index=replica.tp.partition,
            leader_epoch=proposal.leader_epoch,
            partition_epoch=proposal.partition_epoch,
        )
        for state in proposal.new_isr_with_epochs:
            entry.new_isr_with_epochs.add(broker_id=state.broker_id, broker_epoch=state.broker_epoch)
        self._log.info(
            "alter_partition_sent",
            partition=str(replica.tp),
            leader_epoch=proposal.leader_epoch,
            partition_epoch=proposal.partition_epoch,
            new_isr_with_epochs=[(s.broker_id, s.broker_epoch) for s in proposal.new_isr_with_epochs],
        )
        for _attempt in range(20):
            response = await self.controller.call("AlterPartition", request)
            if response is not None:
                break
            await asyncio.sleep(0.2)
        else:
            response = None
        leader = replica.leader
        if leader is None:
            return
        if response is None or response.error_code != ErrorCode.NONE:
            code = ErrorCode.REQUEST_TIMED_OUT if response is None else ErrorCode.of(response.error_code)
            result = AlterPartitionResult(code, (), -1, -1)
        else:
            answer = response.topics[0].partitions[0]
            code = ErrorCode.of(answer.error_code)
            result = AlterPartitionResult(code, tuple(answer.isr), answer.leader_epoch, answer.partition_epoch)
            event = "alter_partition_accepted" if code == ErrorCode.NONE else "alter_partition_rejected"
            self._log.info(
                event,
                partition=str(replica.tp),
                error=code.name,
                isr=list(answer.isr),
                partition_epoch=answer.partition_epoch,
                leader_epoch=answer.leader_epoch,
            )
        replica.role, effects = leader.on_alter_partition_response(proposal, result, monotonic_ms())
        if code == ErrorCode.NONE:
            self._hwm_moved(replica, monotonic_ms())
            self.notify()
        if any(isinstance(effect, SendAlterPartition) for effect in effects):
            # The outcome is unknown (no answer, NOT_CONTROLLER): the controller may have applied it, so the same
            # request goes again rather than rolling back (a rollback could break ReplicationQuorumSuperset).
            await asyncio.sleep(0.2)
            current = replica.leader
            pending = current.isr_state if current is not None else None
            if isinstance(pending, PendingExpandIsr | PendingShrinkIsr) and pending.proposal == proposal:
                self._send_alter_partition(replica, proposal)

    def _spawn(self, coroutine: object) -> None:
        task = asyncio.create_task(coroutine)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- follower fetchers ----

    def _ensure_fetcher(self, leader_id: int) -> None:
        task = self._fetchers.get(leader_id)
        if task is None or task.done():
            from broker.fetcher import run_fetcher

            self._fetchers[leader_id] = asyncio.create_task(run_fetcher(self, leader_id), name=f"fetcher-{leader_id}")

    def followed_from(self, leader_id: int) -> list[Replica]:
        return [r for r in self.replicas.values() if r.leader is None and r.leader_id == leader_id]

    async def stop(self) -> None:
        for task in list(self._fetchers.values()) + list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._fetchers.values(), *self._tasks, return_exceptions=True)
        for replica in self.replicas.values():
            self._fail_waiters(replica, ErrorCode.NOT_LEADER_OR_FOLLOWER)


def answered(value: T) -> asyncio.Future[T]:
    """An already-resolved future: an answer known without waiting."""
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future
