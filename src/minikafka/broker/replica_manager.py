"""The broker's replicas: leader and follower roles from metadata, Produce/Fetch on the leader, acks=all waits,
AlterPartition sending (holdable for the KIP-903 replay), and the follower fetchers.

The replication decisions live in the pure `broker.replica.partition` roles (Leader, Follower); this shell owns the
logs, the clock, the network and the waiting.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TypeVar

import structlog

from minikafka.broker.alter_partition_manager import AlterPartitionManager, ProposalTarget
from minikafka.broker.client_authorizer import ClientAuthorizer
from minikafka.broker.config import BrokerConfig
from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.delta_slices import DEFAULT_STEPS_PER_SLICE, ApplyPartition, PendingDeltas, StartDelta
from minikafka.broker.fetch_session import FetchSessionCache, PartitionFetchState, PartitionKey
from minikafka.broker.fetcher import FollowerAnswer, run_fetcher
from minikafka.broker.follower_fetch_states import FetchStateChanges, FollowerFetchStates
from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.broker.metadata_listener import MetadataDelta, MetadataListener, endpoint_for
from minikafka.broker.produce_purgatory import ProducePurgatory, ProduceResult
from minikafka.broker.producer_id_manager import ProducerIdManager
from minikafka.broker.replica.delete_records import deletion_target, low_watermark
from minikafka.broker.replica.divergence import EpochEndOffset, diverging_epoch
from minikafka.broker.replica.partition import (
    AlterPartitionProposal,
    AlterPartitionResult,
    AssignEpochStartOffset,
    Effect,
    FailPendingProduces,
    Follower,
    Leader,
    ListedOffset,
    PartitionConfig,
    PartitionMetadata,
    PendingExpandIsr,
    PendingShrinkIsr,
    Role,
    SendAlterPartition,
    StartFetching,
    apply_metadata,
    reconfigure,
)
from minikafka.broker.replication_throttles import ReplicationThrottles
from minikafka.common.clock import monotonic_ms
from minikafka.common.control_batch import EndTxnMarker
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.purgatory import Purgatory
from minikafka.common.record_batch import InvalidRecordError, iter_batches
from minikafka.common.standard_authorizer import AuthorizerSettings
from minikafka.common.topic import is_internal
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.storage.partition_log import AppendInfo, PartitionLog, Verification
from minikafka.storage.transaction_index import AbortedTxn

HWM_EVENT_INTERVAL_MS = 1000  # high_watermark_advanced is coalesced to at most one event a second per partition
ALTER_PARTITION_RETRY_S = 0.2
FETCHER_RESTART_S = 1.0  # a fetcher that failed on an unexpected error starts again after this pause
EARLIEST_TIMESTAMP = -2  # ListOffsets' special timestamps, Kafka's values
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3  # the record with the largest timestamp (ListOffsets v7+)
EARLIEST_LOCAL_TIMESTAMP = -4  # tiered storage's lookups: the local log's start (v8+), the last tiered offset (v9+)
LATEST_TIERED_TIMESTAMP = -5
READ_UNCOMMITTED = 0  # Kafka's IsolationLevel ids
READ_COMMITTED = 1
T = TypeVar("T")


@dataclass(frozen=True)
class DeletedRecords:
    """One partition's DeleteRecords outcome: the log start offset (the low watermark) after it, or the error."""

    error: ErrorCode
    low_watermark: int = -1
    message: str | None = None


@dataclass(frozen=True)
class FetchPartitionResult:
    """The leader's answer to one partition of a Fetch (a follower's or a consumer's)."""

    error: ErrorCode
    records: bytes = b""
    high_watermark: int = -1
    diverging: EpochEndOffset | None = None
    last_stable_offset: int = -1  # -1: not known (a follower's fetch answers the HWM in its place)
    # read_committed: the aborted transactions the records overlap; None for read_uncommitted (Kafka's null)
    aborted: tuple[AbortedTxn, ...] | None = None
    settled: bool = False  # a follower's: in the ISR at our log end (its session may skip it until it changes)


@dataclass
class Replica:
    tp: TopicPartition
    topic_id: uuid.UUID
    log: PartitionLog
    role: Role  # the pure core's state for this partition: Leader while we lead, else Follower
    produces: ProducePurgatory
    last_hwm_event_ms: int = 0
    append_failure: str | None = None  # the follower append error last logged, so a repeating one is logged once
    # The leader epoch in which a corrupt batch from the leader made this follower stop fetching the partition
    # (Kafka's failed partitions): a new leader epoch fetches it again.
    failed_in_epoch: int | None = None

    @property
    def failed(self) -> bool:
        return self.failed_in_epoch is not None and self.failed_in_epoch == self.leader_epoch

    @property
    def leader(self) -> Leader | None:
        return self.role if isinstance(self.role, Leader) else None

    @property
    def follower(self) -> Follower | None:
        return self.role if isinstance(self.role, Follower) else None

    @property
    def leader_id(self) -> int:
        return self.role.broker_id if isinstance(self.role, Leader) else self.role.leader_id

    @property
    def leader_epoch(self) -> int:
        return self.role.leader_epoch

    @property
    def partition_epoch(self) -> int:
        return self.role.partition_epoch

    @property
    def target(self) -> ProposalTarget:
        return ProposalTarget(self.tp, self.topic_id)


class ReplicaManager:
    def __init__(
        self,
        config: BrokerConfig,
        logs: LogManager,
        metadata: MetadataListener,
        controller: ControllerClient,
        broker_epoch: Callable[[], int],
        serving: Callable[[], bool],
        authorizer: ClientAuthorizer | None = None,
        caught_up: Callable[[], bool] = lambda: True,
        throttles: ReplicationThrottles | None = None,
    ) -> None:
        """`caught_up`: whether the controller has acknowledged this broker's metadata caught up since start-up;
        `throttles`: the replication throttles' windows (default Kafka's)."""
        self.config = config
        self.logs = logs
        self.metadata = metadata
        self.broker_epoch = broker_epoch
        self.serving = serving
        self.controller = controller  # Kafka-wire admin requests are forwarded to the active controller
        # Both client listeners ask it whether a caller may do what a request asks (off without authorizer.class.name).
        self.authorizer = authorizer or ClientAuthorizer(AuthorizerSettings(), lambda: metadata.image.acls)
        self.auto_creations: dict[str, asyncio.Task[object]] = {}  # topics being auto-created, by name
        self.replicas: dict[TopicPartition, Replica] = {}
        self.alter_partition = AlterPartitionManager(
            controller, config.node_id, broker_epoch, self._on_alter_partition_answer
        )
        # InitProducerId's ids (Kafka keeps it beside the transaction coordinator; there is none here).
        self.producer_ids = ProducerIdManager(controller, config.node_id, broker_epoch)
        # transaction.partition.verification.enable, set by the broker that has a transaction coordinator
        self.transaction_verification = False
        self._caught_up = caught_up
        self._first_delta_seen = False
        # Parked fetches, each its own future (awaited directly: one loop turn from a change to its answer). A
        # follower's wakes on new data, a consumer's on a HWM move (what it may read). Like Kafka's DelayedFetch, a
        # HWM move alone does not answer a follower (that would double its fetches).
        self._parked: dict[bool, Purgatory] = {True: Purgatory(), False: Purgatory()}  # key: for replicas
        # Followers' log starts from their Fetch requests in one leader epoch (a new leadership starts empty), for
        # DeleteRecords' low watermark; woken when one moves.
        self.follower_log_starts: dict[TopicPartition, tuple[int, dict[int, int]]] = {}
        self._log_start_moved = Purgatory()
        self._follower_wake_scheduled = False
        self._watched_sessions: list[FetchSessionCache] = []  # told of every partition change (followers' sessions)
        self._fetchers: dict[int, asyncio.Task[None]] = {}
        self._fetch_states = FollowerFetchStates()  # what the fetchers fetch, kept as the replicas change
        # Replicas whose fetch state may have moved since the fetchers last looked (None: the replica is gone).
        self._fetch_state_moved: dict[PartitionKey, Replica | None] = {}
        self._eligible_epochs: tuple[object, dict[int, int]] = (None, {})
        self._eligible_seen: dict[int, int] = {}  # the eligible brokers when the last delta was applied
        self._checked_topics: object = None  # the topics map last checked for replicas taken from this broker
        self._checked_configs: tuple[object, object] = (None, None)  # the config maps last applied to replicas
        self._overridden_static: str | None = None  # the dynamic min.insync.replicas last warned about
        self.throttles = throttles or ReplicationThrottles(config.node_id)
        self._pending = PendingDeltas()  # metadata deltas not yet applied to the replicas, in log order
        self._applier: asyncio.Task[None] | None = None
        self._applied_offset = -1
        self._delta_applied: list[Callable[[], None]] = []  # told once each delta is applied in full
        self.steps_per_slice = DEFAULT_STEPS_PER_SLICE
        self._log = structlog.get_logger()

    @property
    def metadata_ready(self) -> bool:
        """Whether clients may be answered from the image: the first delta is in and the controller acknowledged our
        catch-up (Kafka's initialCatchUpFuture); until then the image may lack topics and ACLs."""
        return self._first_delta_seen and self._caught_up()

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

    def watch_fetch_sessions(self, sessions: FetchSessionCache) -> None:
        """Mark every partition change in `sessions` from now on: its followers' sessions read changed partitions
        only."""
        if not any(watched is sessions for watched in self._watched_sessions):
            self._watched_sessions.append(sessions)

    def _partition_changed(self, replica: Replica, followers: Collection[int] | None = None) -> None:
        """What a Fetch of `replica` answers is about to change (records, HWM, log start, role): followers'
        sessions (those of `followers` only, if given) read it at their next Fetch, and the Fetches that skipped it
        as settled count first."""
        key = (replica.topic_id.bytes, replica.tp.partition)
        for sessions in self._watched_sessions:
            vouched = sessions.mark_changed(key, followers)
            leader = replica.leader
            if vouched and leader is not None:
                replica.role = leader.on_idle_fetches(vouched)

    def count_idle_fetch(self, tp: TopicPartition, replica_id: int, fetch_ms: int) -> None:
        """Follower `replica_id`'s Fetches up to `fetch_ms` skipped `tp` as settled: count them as caught up."""
        replica = self.replicas.get(tp)
        if replica is not None and replica.leader is not None:
            replica.role = replica.leader.on_idle_fetches({replica_id: fetch_ms})

    def log_start_moved(self, tp: TopicPartition) -> None:
        """Retention moved `tp`'s log start: the followers learn it from their next Fetch."""
        replica = self.replicas.get(tp)
        if replica is not None:
            self._partition_changed(replica)
            self._fetch_state_may_move(replica)

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
        if tp in self.logs.unopened:  # assigned here, but its files could not be opened (out of descriptors)
            return ErrorCode.KAFKA_STORAGE_ERROR
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def min_insync_replicas(self, topic: str) -> int:
        return self.metadata.image.min_insync_replicas(topic, self.config.min_insync_replicas, self.config.node_id)

    def on_metadata(self, delta: MetadataDelta) -> None:
        """Queue the delta and apply its first slice now; the rest follows one slice per loop turn, so that the
        heartbeats and requests of the broker never wait behind a delta of thousands of partitions."""
        self._first_delta_seen = True
        # Partitions whose files could not be opened are tried again at every update.
        retried = [(topic_id, tp.partition) for tp, topic_id in self.logs.unopened.items()]
        self._pending.add(delta.image, delta.offset, (*delta.changed_partitions, *retried))
        if self._applier is not None and not self._applier.done():
            return  # the running applier takes it in turn
        self._apply_slice()
        if not self._pending:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop to yield to (a synchronous caller): apply it all now
            while self._pending:
                self._apply_slice()
            return
        self._applier = asyncio.create_task(self._apply_pending(), name="metadata-delta-applier")
        self._applier.add_done_callback(self._on_applier_done)

    def on_delta_applied(self, callback: Callable[[], None]) -> None:
        """`callback` runs each time a metadata delta has been applied to every replica (Kafka's publishers run
        after the replica manager's, so the coordinators see the new leaderships)."""
        self._delta_applied.append(callback)

    @property
    def applied_metadata_offset(self) -> int:
        """The metadata offset this broker's replicas reflect (what its heartbeats report): the listener's while
        nothing is pending, else the last delta applied in full."""
        return self._applied_offset if self._pending else self.metadata.offset

    async def _apply_pending(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # one slice per loop turn: timers, heartbeats and requests run in between
            self._apply_slice()

    def _on_applier_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._log.error("metadata_delta_apply_failed", error=repr(task.exception()))

    def _apply_slice(self) -> None:
        now = monotonic_ms()
        # Parked Fetches are woken only when a leadership here ended or changed epoch, as Kafka completes delayed
        # fetches of the partitions that became followers: an ISR change alone answers nothing new to a follower,
        # and a wake per slice made every follower re-read its unsettled partitions once per slice.
        wake = False
        for step in self._pending.next_slice(self.steps_per_slice):
            if isinstance(step, StartDelta):
                wake |= self._remove_unassigned_replicas(step.image)
                self._forget_unopened(step.image)
            elif isinstance(step, ApplyPartition):
                wake |= self._apply_partition(step.image, step.topic_id, step.partition, now)
            else:
                self._applied_offset = step.offset
                self._apply_dynamic_configs(step.image, now)
                self._stop_idle_fetchers()
                wake |= self._reread_for_newly_eligible()
                for callback in self._delta_applied:
                    callback()
        if wake:
            self.notify()

    def _reread_for_newly_eligible(self) -> bool:
        """Brokers that became eligible for the ISRs (registered, unfenced, out of controlled shutdown, or of a new
        epoch) since the last delta: the partitions we lead that they follow from outside the ISR are read again at
        their next Fetch, where an expansion is decided (their sessions held them settled while they were not
        eligible). True if any was marked."""
        epochs = self.metadata_broker_epochs()
        seen, self._eligible_seen = self._eligible_seen, epochs
        joined = {broker for broker, epoch in epochs.items() if seen.get(broker) != epoch}
        if not joined:
            return False
        marked = False
        for replica in self.replicas.values():
            leader = replica.leader
            if leader is not None and any(b in leader.replicas and b not in leader.isr for b in joined):
                self._partition_changed(replica, joined)
                marked = True
        return marked

    def _forget_unopened(self, image: MetadataImage) -> None:
        """Unopened partitions deleted or moved away meanwhile: nothing to open any more."""
        for tp, topic_id in list(self.logs.unopened.items()):
            partition = image.partition(topic_id, tp.partition)
            if partition is None or self.config.node_id not in partition.replicas:
                del self.logs.unopened[tp]

    def _apply_partition(self, image: MetadataImage, topic_id: uuid.UUID, index: int, now: int) -> bool:
        """Become leader or follower of one partition as the image says (or nothing, when nothing is new). True
        when a leadership of this broker ended or changed epoch: the Fetches parked on it must answer."""
        topic = image.topic(topic_id)
        partition = image.partition(topic_id, index)
        if topic is None or partition is None or self.config.node_id not in partition.replicas:
            return False
        tp = TopicPartition(topic.name, index)
        replica = self.replicas.get(tp)
        try:
            log = replica.log if replica is not None else self.logs.get_or_create(tp, topic_id, now)
        except KafkaError:
            return False  # its log dir is offline (the failure channel has the news): no replica here to serve
        metadata = PartitionMetadata(
            partition.replicas,
            partition.isr,
            partition.leader,
            partition.leader_epoch,
            partition.partition_epoch,
            partition.leader_recovery_state,
        )
        config = PartitionConfig(
            self.min_insync_replicas(tp.topic), self.config.replica_lag_time_max_ms, image.elr_enabled
        )
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
            self.metadata_broker_epochs(),
        )
        if transition is None:
            return False  # an older partition epoch, or nothing new (the core logged why)
        led_in = replica.leader.leader_epoch if replica is not None and replica.leader is not None else None
        if replica is None:
            replica = self.replicas[tp] = Replica(tp, topic_id, log, transition.state, ProducePurgatory(str(tp)))
        replica.role = transition.state
        self._fetch_state_may_move(replica)
        # Our log end is the same in the new role: what the sessions vouch for holds for it.
        self._partition_changed(replica)
        self._execute(replica, transition.effects, now)
        return led_in is not None and (replica.leader is None or replica.leader_epoch != led_in)

    def _apply_dynamic_configs(self, image: MetadataImage, now: int) -> None:
        """Topic and dynamic broker configs replayed since the last look (images are immutable, so identity tells):
        each replica's log settings, and a leader's min.insync.replicas, follow them at once."""
        configs = (image.topic_configs, image.broker_configs)
        if configs[0] is self._checked_configs[0] and configs[1] is self._checked_configs[1]:
            return
        self._checked_configs = configs
        self._warn_static_min_isr_overridden(image)
        for setting in self.throttles.update(image):
            self._log.info("replication_throttle_changed", side=setting.side, rate=setting.rate, topics=setting.topics)
        for tp, replica in self.replicas.items():
            changed = []
            log_config = self.logs.log_config(tp.topic)
            if log_config != replica.log.config:
                replica.log.config = log_config
                changed.append("log")
            leader = replica.leader
            min_isr = self.min_insync_replicas(tp.topic)
            if leader is not None and leader.config.min_insync_replicas != min_isr:
                replica.role, moved = reconfigure(leader, replace(leader.config, min_insync_replicas=min_isr), now)
                changed.append("min.insync.replicas")
                if moved:
                    self._hwm_moved(replica, now)
                self._check_produces(replica)
            if changed:
                self._log.info(
                    "partition_config_changed", partition=str(tp), changed=changed, min_insync_replicas=min_isr
                )

    def _warn_static_min_isr_overridden(self, image: MetadataImage) -> None:
        """As in Kafka, a dynamic min.insync.replicas wins over the properties file's: say so once per value."""
        dynamic = image.dynamic_broker_config("min.insync.replicas", self.config.node_id)
        static = str(self.config.min_insync_replicas)
        if "min.insync.replicas" not in self.config.set_keys or dynamic in (None, static, self._overridden_static):
            return
        self._overridden_static = dynamic
        self._log.warning(
            "static_config_overridden", name="min.insync.replicas", static_value=static, dynamic_value=dynamic
        )

    def _remove_unassigned_replicas(self, image: MetadataImage) -> bool:
        """Stop the replicas the metadata no longer assigns here (topic deleted, moved off by a reassignment) and
        delete their logs (True if any). First, so a topic re-created under the same name starts from an empty
        log. Checked only when the topics changed (images are immutable, so identity tells)."""
        if image.topics_by_id is self._checked_topics:
            return False
        self._checked_topics = image.topics_by_id
        removed = False
        for tp, replica in list(self.replicas.items()):
            partition = image.partition(replica.topic_id, tp.partition)
            if partition is not None and self.config.node_id in partition.replicas:
                continue
            removed = True
            reason = "topic deleted" if image.topic(replica.topic_id) is None else "replica removed"
            self._partition_changed(replica)
            del self.replicas[tp]
            self._fetch_state_moved[(replica.topic_id.bytes, tp.partition)] = None
            self.follower_log_starts.pop(tp, None)
            replica.produces.fail_all(self.not_hosted_error(tp))
            self._log.info("replica_stopped", partition=str(tp), topic_id=str(replica.topic_id), reason=reason)
            self.logs.delete_log(tp, replica.topic_id, reason)
        return removed

    def _execute(self, replica: Replica, effects: tuple[Effect, ...], now: int) -> None:
        """Carry out what the core decided for one partition."""
        for effect in effects:
            if isinstance(effect, FailPendingProduces):
                replica.produces.fail_all(effect.error)
            elif isinstance(effect, AssignEpochStartOffset):
                replica.log.assign_epoch_start_offset(effect.leader_epoch, effect.start_offset)
            elif isinstance(effect, StartFetching):
                self._ensure_fetcher(effect.leader_id)
            elif isinstance(effect, SendAlterPartition):
                self.alter_partition.send(replica.target, effect.proposal)
            # StopFetching: its fetch state goes at the next round (noted with its role); an idle fetcher is stopped.
        if replica.leader is not None:
            self._hwm_moved(replica, now)

    # ---- produce ----

    def produce(
        self,
        tp: TopicPartition,
        records: bytes,
        acks: int,
        timeout_ms: int,
        internal_topics_allowed: bool = False,
        verification_guard: int | None = None,
    ) -> asyncio.Future[ProduceResult]:
        """Append as leader now, in call order (a pipelined stream relies on it); the returned future answers at
        once, or for acks=all when the HWM passes the batch. Only a coordinator appends to an internal topic
        (`internal_topics_allowed`); a client's append there is INVALID_TOPIC_EXCEPTION, as in Kafka. With
        transaction verification on, a producer's first transactional batch needs `verification_guard`."""
        if is_internal(tp.topic) and not internal_topics_allowed:
            message = f"Cannot append to internal topic {tp.topic}"
            return answered(ProduceResult(ErrorCode.INVALID_TOPIC_EXCEPTION, message=message))
        # A coordinator's own transactional batches (offset commits) skip the producer's sequence checks, and are
        # not a producer's: nothing to verify.
        coordinator = internal_topics_allowed
        verifying = self.transaction_verification and not internal_topics_allowed
        verification = Verification(verification_guard) if verifying else None
        return self._append_as_leader(
            tp,
            acks,
            timeout_ms,
            lambda log, epoch, now: log.append_as_leader(records, epoch, now, coordinator, verification),
        )

    def high_watermark_reached(self, tp: TopicPartition, timeout_ms: int) -> asyncio.Future[ProduceResult] | None:
        """The log's end as it stands acknowledged, as an acks=all write is: a future that answers once the HWM
        passes it, or None when it already has. A coordinator that loaded an uncommitted tail of its log answers
        from it only then."""
        replica = self.replicas.get(tp)
        leader = replica.leader if replica is not None else None
        if replica is None or leader is None or not self.serving():
            message = f"broker {self.config.node_id} does not lead {tp} now"
            return answered(ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, message=message))
        end = replica.log.log_end_offset
        if leader.high_watermark >= end:
            return None
        return self._wait_for_high_watermark(replica, end, end, timeout_ms, monotonic_ms())

    def write_txn_marker(
        self, tp: TopicPartition, marker: EndTxnMarker, timeout_ms: int
    ) -> asyncio.Future[ProduceResult]:
        """Write a transaction's COMMIT or ABORT marker as the coordinator asks (WriteTxnMarkers), on any topic
        (the markers of a consume-transform-produce go to __consumer_offsets too), answered once the ISR has it:
        Kafka appends markers with acks=all."""
        return self._append_as_leader(
            tp, -1, timeout_ms, lambda log, epoch, now: log.append_marker_as_leader(marker, epoch, now)
        )

    def _append_as_leader(
        self, tp: TopicPartition, acks: int, timeout_ms: int, append: Callable[[PartitionLog, int, int], AppendInfo]
    ) -> asyncio.Future[ProduceResult]:
        """`append(log, leader_epoch, now)` on `tp`'s log if this broker hosts and leads it now."""
        replica = self.replicas.get(tp)
        if replica is None:
            return answered(ProduceResult(self.not_hosted_error(tp), message=f"{tp} is not hosted here"))
        leader = replica.leader
        if leader is None or not self.serving():
            message = f"broker {self.config.node_id} does not lead {tp} now"
            return answered(ProduceResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, message=message))
        code = leader.check_produce(acks)
        if code != ErrorCode.NONE:
            message = f"ISR {sorted(leader.isr)} is below min.insync.replicas {leader.effective_min_isr}"
            return answered(ProduceResult(code, message=message))
        now = monotonic_ms()
        try:
            info = append(replica.log, leader.leader_epoch, now)
        except KafkaError as error:
            record_errors = error.record_errors if isinstance(error, InvalidRecordError) else ()
            return answered(ProduceResult(error.code, message=error.message, record_errors=record_errors))
        self._partition_changed(replica)
        leader = replica.leader
        assert leader is not None
        # Also after a duplicate (a retry answered with its first write's offsets), as Kafka does after every append:
        # time may have taken a follower the HWM waited for out of the running, and no fetch of its will come.
        replica.role, moved = leader.on_local_append(replica.log.log_end_offset, now)
        if moved:
            self._hwm_moved(replica, now)
        # Followers have data to fetch (consumers only once the HWM moves). acks=all waits for them: wake them now.
        if acks != -1:
            self._wake_followers_after_answer()
            stamp = info.log_append_time_ms
            return answered(ProduceResult(ErrorCode.NONE, info.first_offset, log_append_time_ms=stamp))
        self.notify(consumers=False)
        return self._wait_for_high_watermark(
            replica, info.first_offset, info.last_offset + 1, timeout_ms, now, info.log_append_time_ms
        )

    def _wait_for_high_watermark(
        self, replica: Replica, base_offset: int, required_offset: int, timeout_ms: int, now: int, stamp: int = -1
    ) -> asyncio.Future[ProduceResult]:
        """Answered once the HWM reaches `required_offset` (checked at once too: it may be there already), or at
        the deadline; `stamp`: a LogAppendTime batch's time for the answer."""
        answer = replica.produces.add(
            base_offset, required_offset, timeout_ms, now, lambda: self._check_produces(replica), stamp
        )
        self._check_produces(replica, now)
        return answer

    def _check_produces(self, replica: Replica, now: int | None = None) -> None:
        """`now`: the caller's clock reading in the same step, as a clock read costs a system call here."""
        if replica.leader is not None:
            replica.produces.check(replica.leader, monotonic_ms() if now is None else now)

    def _hwm_moved(self, replica: Replica, now: int) -> None:
        leader = replica.leader
        assert leader is not None
        replica.log.high_watermark = leader.high_watermark
        self._partition_changed(replica)
        self.notify(replicas=False)  # consumers may read further
        replica.produces.check(leader, now)
        if now - replica.last_hwm_event_ms >= HWM_EVENT_INTERVAL_MS:
            replica.last_hwm_event_ms = now
            self._log.info(
                "high_watermark_advanced",
                partition=str(replica.tp),
                high_watermark=leader.high_watermark,
                leader_epoch=leader.leader_epoch,
                log_end_offset=replica.log.log_end_offset,
                # Computed here only, once a second at most: the analysis checks the LSO never goes back.
                last_stable_offset=replica.log.last_stable_offset,
            )

    # ---- consumers' reads on the leader (the gRPC and the Kafka-wire front ends alike) ----

    def consumer_fetch(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        current_leader_epoch: int,
        max_bytes: int,
        last_fetched_epoch: int = -1,
        first_whole: bool = True,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> FetchPartitionResult:
        """One partition of a consumer's Fetch: whole batches below the high watermark, or with read_committed
        below the last stable offset, with the aborted transactions they overlap. A consumer that names its last
        fetched epoch (Fetch v12+) is told where its log diverges, as Kafka tells any fetcher."""
        replica = self.replicas.get(tp)
        if replica is None or replica.leader is None or not self.serving():
            return FetchPartitionResult(self.not_hosted_error(tp))
        log = replica.log
        bound = replica.leader.consumer_read(fetch_offset, log.log_start_offset, current_leader_epoch)
        hwm, lso = bound.high_watermark, log.last_stable_offset
        committed = isolation_level == READ_COMMITTED
        aborted: tuple[AbortedTxn, ...] | None = () if committed else None
        if bound.error not in (ErrorCode.NONE, ErrorCode.OFFSET_OUT_OF_RANGE):
            return FetchPartitionResult(bound.error, high_watermark=hwm, last_stable_offset=lso, aborted=aborted)
        # Before the offset range, as Kafka: a consumer past the end of a truncated epoch learns where it ends.
        diverging = self._diverging(log, last_fetched_epoch, fetch_offset) if last_fetched_epoch >= 0 else None
        if diverging is not None:
            return FetchPartitionResult(ErrorCode.NONE, b"", hwm, diverging, lso, aborted)
        read_below = bound.read_below
        if committed and read_below is not None:
            read_below = lso if fetch_offset < lso else None
        if read_below is None:
            return FetchPartitionResult(bound.error, high_watermark=hwm, last_stable_offset=lso, aborted=aborted)
        try:
            records = log.read(fetch_offset, max_bytes, read_below, first_whole)
        except KafkaError as error:
            return FetchPartitionResult(error.code, high_watermark=hwm, last_stable_offset=lso, aborted=aborted)
        if committed and records:
            aborted = tuple(log.aborted_transactions(fetch_offset, _end_offset(records)))
        return FetchPartitionResult(ErrorCode.NONE, records, hwm, None, lso, aborted)

    @staticmethod
    def _diverging(log: PartitionLog, last_fetched_epoch: int, fetch_offset: int) -> EpochEndOffset | None:
        leader_end = EpochEndOffset(*log.end_offset_for_epoch(last_fetched_epoch))
        return diverging_epoch(leader_end, last_fetched_epoch, fetch_offset)

    def offset_for_leader_epoch(self, tp: TopicPartition, current_leader_epoch: int, leader_epoch: int) -> ListedOffset:
        """OffsetForLeaderEpoch on the leader: the largest epoch at most `leader_epoch` its log knows, and where
        that epoch ends (the gRPC and the Kafka-wire front ends alike)."""
        replica = self.replicas.get(tp)
        if replica is None or replica.leader is None:
            return ListedOffset(self.not_hosted_error(tp))
        code = replica.leader.check_current_leader_epoch(current_leader_epoch)
        if code != ErrorCode.NONE:
            return ListedOffset(code)
        epoch, end = replica.log.end_offset_for_epoch(leader_epoch)
        return ListedOffset(ErrorCode.NONE, end, epoch)

    def list_offset(
        self, tp: TopicPartition, timestamp: int, current_leader_epoch: int, isolation_level: int = READ_UNCOMMITTED
    ) -> ListedOffset:
        """ListOffsets for one partition: the log start (EARLIEST_TIMESTAMP), the high watermark
        (LATEST_TIMESTAMP), the first record with the largest timestamp (MAX_TIMESTAMP), or the first record whose
        timestamp is at or after `timestamp`. A consumer sees only records below the HWM (with read_committed,
        below the last stable offset): a record found at or past it is answered as none (offset and timestamp
        -1), as Kafka does."""
        replica = self.replicas.get(tp)
        if replica is None or replica.leader is None or not self.serving():
            return ListedOffset(self.not_hosted_error(tp))
        leader = replica.leader
        committed = isolation_level == READ_COMMITTED
        if timestamp == LATEST_TIMESTAMP:
            latest = leader.latest_offset(current_leader_epoch)
            if committed and latest.error == ErrorCode.NONE:
                return replace(latest, offset=replica.log.last_stable_offset)
            return latest
        code = leader.check_current_leader_epoch(current_leader_epoch)
        if code != ErrorCode.NONE:
            return ListedOffset(code)
        if timestamp == EARLIEST_TIMESTAMP:
            return ListedOffset(code, replica.log.log_start_offset, leader.leader_epoch)
        if timestamp == EARLIEST_LOCAL_TIMESTAMP:  # without tiered storage the local log starts at the log start
            return ListedOffset(code, replica.log.log_start_offset, leader.leader_epoch)
        if timestamp == LATEST_TIERED_TIMESTAMP:  # nothing is tiered: Kafka answers offset -1 when remote log is off
            return ListedOffset(code)
        if timestamp < MAX_TIMESTAMP:
            return ListedOffset(ErrorCode.UNSUPPORTED_VERSION)  # a lookup of a later version, not offered
        try:
            found = (
                replica.log.max_timestamp_offset()
                if timestamp == MAX_TIMESTAMP
                else replica.log.offset_for_timestamp(timestamp)
            )
        except KafkaError as error:
            return ListedOffset(error.code)
        visible_below = replica.log.last_stable_offset if committed else leader.high_watermark
        if found is None or found.offset >= visible_below:
            return ListedOffset(ErrorCode.NONE)
        return ListedOffset(ErrorCode.NONE, found.offset, found.leader_epoch, found.timestamp)

    def delete_records(self, tp: TopicPartition, offset: int) -> DeletedRecords:
        """DeleteRecords for one partition on its leader: the log start moves up to `offset` (-1: the high
        watermark); followers follow it through Fetch's log_start_offset. The low watermark answered is the
        leader's log start (Kafka waits for the followers' too)."""
        replica = self.replicas.get(tp)
        if replica is None or replica.leader is None or not self.serving():
            return DeletedRecords(self.not_hosted_error(tp))
        target = deletion_target(offset, replica.leader.high_watermark, str(tp))
        if target.error != ErrorCode.NONE:
            return DeletedRecords(target.error, message=target.message)
        try:
            replica.log.delete_before(target.offset, reason="client_record_deletion")
        except KafkaError as error:
            return DeletedRecords(error.code, message=error.message)
        self._partition_changed(replica)
        return DeletedRecords(ErrorCode.NONE, replica.log.log_start_offset)

    def _record_follower_log_start(
        self, tp: TopicPartition, leader_epoch: int, replica_id: int, log_start_offset: int
    ) -> None:
        epoch, starts = self.follower_log_starts.get(tp, (None, {}))
        if epoch != leader_epoch:
            starts = {}
            self.follower_log_starts[tp] = (leader_epoch, starts)
        if log_start_offset >= 0 and starts.get(replica_id) != log_start_offset:
            starts[replica_id] = log_start_offset
            self._log_start_moved.wake_all()

    async def delete_records_replicated(self, tp: TopicPartition, offset: int, timeout_s: float) -> DeletedRecords:
        """DeleteRecords as Kafka's DelayedDeleteRecords: answered once the low watermark (the lowest log start of
        the leader and its followers on live brokers) reached the new log start, or REQUEST_TIMED_OUT."""
        deleted = self.delete_records(tp, offset)
        if deleted.error != ErrorCode.NONE:
            return deleted
        target = deleted.low_watermark
        deadline = asyncio.get_running_loop().time() + timeout_s
        while True:
            replica = self.replicas.get(tp)
            if replica is None or replica.leader is None:
                return DeletedRecords(self.not_hosted_error(tp))
            alive = self.metadata_broker_epochs()
            followers = [f.replica_id for f in replica.leader.followers if f.replica_id in alive]
            epoch, starts = self.follower_log_starts.get(tp, (None, {}))
            known = starts if epoch == replica.leader.leader_epoch else {}
            low = low_watermark(replica.log.log_start_offset, known, followers)
            if low >= target:
                return DeletedRecords(ErrorCode.NONE, low)
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return DeletedRecords(ErrorCode.REQUEST_TIMED_OUT)
            await self._log_start_moved.wait(left)

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
        first_whole: bool = True,
        log_start_offset: int = -1,
        now: int | None = None,
    ) -> FetchPartitionResult:
        """One partition of a follower's Fetch. `record_fetch=False` re-reads for a Fetch that waited: its fetch
        was already counted in the follower's state when it arrived, once, as in Kafka. `now`: the Fetch's clock
        reading, when the caller has one from the same step."""
        replica = self.replicas.get(tp)
        if replica is None or replica.leader is None or not self.serving():
            return FetchPartitionResult(self.not_hosted_error(tp))
        leader = replica.leader
        code = leader.check_current_leader_epoch(current_leader_epoch)
        if code != ErrorCode.NONE:
            return FetchPartitionResult(code, high_watermark=leader.high_watermark)
        log = replica.log
        diverging = self._diverging(log, last_fetched_epoch, fetch_offset) if last_fetched_epoch >= 0 else None
        if diverging is not None:
            return FetchPartitionResult(ErrorCode.NONE, high_watermark=leader.high_watermark, diverging=diverging)
        if record_fetch:
            self._record_follower_log_start(tp, leader.leader_epoch, replica_id, log_start_offset)
            now = monotonic_ms() if now is None else now
            decision = leader.on_follower_fetch(
                replica_id, replica_epoch, current_leader_epoch, fetch_offset, self.metadata_broker_epochs(), now
            )
            replica.role = leader = decision.state
            if decision.error != ErrorCode.NONE:
                return FetchPartitionResult(decision.error, high_watermark=leader.high_watermark)
            if decision.high_watermark_changed:
                self._hwm_moved(replica, now)
            if decision.proposal is not None:
                self.alter_partition.send(replica.target, decision.proposal)
        if self.throttles.leader.throttled and self.throttles.leader_withholds(
            tp.topic, tp.partition, replica_id, leader.isr, monotonic_ms() if now is None else now
        ):
            return FetchPartitionResult(ErrorCode.NONE, b"", leader.high_watermark)
        try:
            records = log.read(fetch_offset, max_bytes, first_whole=first_whole)
        except KafkaError as error:
            return FetchPartitionResult(error.code, high_watermark=leader.high_watermark)
        leader = replica.leader  # the HWM's move above may have counted idle fetches
        assert leader is not None
        settled = not records and leader.follower_settled(replica_id, self.metadata_broker_epochs())
        return FetchPartitionResult(ErrorCode.NONE, records, leader.high_watermark, settled=settled)

    def shrink_lagging_isrs(self) -> None:
        if not self.serving():
            return  # we refuse the followers' fetches now: their lag says nothing about them
        now = monotonic_ms()
        epochs = self.metadata_broker_epochs()
        for replica in self.replicas.values():
            leader = replica.leader
            if leader is None:
                continue
            leader, moved = leader.on_time_passed(now, epochs)
            replica.role, proposal = leader.maybe_shrink_isr(now, epochs)
            if moved:
                self._hwm_moved(replica, now)
            if proposal is not None:
                self.alter_partition.send(replica.target, proposal)

    # ---- AlterPartition answers ----

    def _on_alter_partition_answer(
        self, target: ProposalTarget, proposal: AlterPartitionProposal, result: AlterPartitionResult
    ) -> None:
        replica = self.replicas.get(target.tp)
        if replica is None or replica.leader is None:
            return
        now = monotonic_ms()
        self._partition_changed(replica)
        assert replica.leader is not None
        replica.role, effects = replica.leader.on_alter_partition_response(proposal, result, now)
        if result.error == ErrorCode.NONE:
            self._hwm_moved(replica, now)
            self.notify()
        if any(isinstance(effect, SendAlterPartition) for effect in effects):
            # The outcome is unknown: the same request goes again, a little later, if it is still the one pending.
            asyncio.get_running_loop().call_later(ALTER_PARTITION_RETRY_S, self._resend_if_pending, replica, proposal)

    def _resend_if_pending(self, replica: Replica, proposal: AlterPartitionProposal) -> None:
        pending = replica.leader.isr_state if replica.leader is not None else None
        if isinstance(pending, PendingExpandIsr | PendingShrinkIsr) and pending.proposal == proposal:
            self.alter_partition.send(replica.target, proposal)

    # ---- follower fetchers ----

    def fetch_changes(self, leader_id: int, resync: bool) -> FetchStateChanges:
        """What this broker fetches from `leader_id` as kept up to date, and the partitions changed since the last
        call; `resync`: read every replica afresh first (a fetcher's full Fetch), as also while a log directory may
        have gone offline unnoticed."""
        if resync or (self.logs is not None and not self.logs.failures.healthy):
            self._fetch_state_moved.clear()
            keys = set()
            for replica in self.replicas.values():
                keys.add(self._put_fetch_state(replica))
            self._fetch_states.keep_only(keys)
        else:
            moved, self._fetch_state_moved = self._fetch_state_moved, {}
            for key, maybe in moved.items():
                if maybe is None:
                    self._fetch_states.put(key, -1, None)
                else:
                    self._put_fetch_state(maybe)
        return self._fetch_states.take(leader_id)

    def _fetch_state_may_move(self, replica: Replica) -> None:
        """Something that goes into `replica`'s fetch state may have moved: the fetchers look at it next round."""
        self._fetch_state_moved[(replica.topic_id.bytes, replica.tp.partition)] = replica

    def _put_fetch_state(self, replica: Replica) -> PartitionKey:
        key = (replica.topic_id.bytes, replica.tp.partition)
        self._fetch_states.put(key, replica.leader_id, self._fetch_state(replica))
        return key

    def _fetch_state(self, replica: Replica) -> PartitionFetchState | None:
        """`replica`'s line in a Fetch to its leader; None when it is not fetched (we lead it, or its log failed)."""
        # A log in a failed directory is fetched for no more (Kafka removes it from its fetcher).
        if replica.follower is None or replica.failed or replica.log.offline:
            return None
        log = replica.log
        return PartitionFetchState(
            replica.topic_id.bytes,
            replica.tp.topic,
            replica.tp.partition,
            replica.leader_epoch,
            log.log_end_offset,
            log.latest_epoch,
            log.log_start_offset,
            self.config.replica_fetch_max_bytes,
        )

    def leader_address(self, leader_id: int) -> str | None:
        broker = self.metadata.image.broker(leader_id)
        endpoint = None if broker is None else endpoint_for(broker, self.config.inter_broker_listener)
        return None if endpoint is None else f"{endpoint.host}:{endpoint.port}"

    def apply_follower_answer(self, answer: FollowerAnswer) -> bool:
        """Apply one partition's Fetch answer on this follower; False when the fetcher should back off. Its fetch
        state is looked at afresh next round (an append, a truncation, a failure or a new log start moves it)."""
        replica = self.replicas.get(TopicPartition(answer.sent.topic, answer.sent.partition))
        applied = self._apply_answer(replica, answer)
        if replica is not None:
            self._fetch_state_may_move(replica)
        if answer.records and self.throttles.follower.throttled:
            self.throttles.record_fetched(answer.sent.topic, answer.sent.partition, len(answer.records), monotonic_ms())
        return applied

    def follower_throttled(self, states: Mapping[PartitionKey, PartitionFetchState]) -> frozenset[PartitionKey]:
        """The partitions of `states` a Fetch leaves out now: throttled replicas of ours out of the ISR while the
        followers' rate is over its bound (none without a follower throttle)."""
        throttles = self.throttles
        if not throttles.follower.throttled:
            return frozenset()
        now, held = monotonic_ms(), []
        for key, state in states.items():
            replica = self.replicas.get(TopicPartition(state.topic, state.partition))
            follower = None if replica is None else replica.follower
            in_isr = follower is not None and self.config.node_id in follower.isr
            if throttles.follower_holds_back(state.topic, state.partition, in_isr, now):
                held.append(key)
        return frozenset(held)

    def record_replication_sent(self, sent: Iterable[tuple[str, int, int]]) -> None:
        """A follower's Fetch answer, (topic, partition, bytes) each: counted by the leaders' throttle (the fetch
        lists them only while a topic is throttled)."""
        self.throttles.record_sent(sent, monotonic_ms())

    def _apply_answer(self, replica: Replica | None, answer: FollowerAnswer) -> bool:
        if replica is not None and replica.topic_id.bytes != answer.sent.topic_id:
            return True  # asked for a topic since deleted and re-created under the same name
        if replica is None or replica.follower is None or replica.log is None or replica.failed:
            return True  # the partition moved while the Fetch was in flight, or is not fetched in this epoch
        follower, log = replica.follower, replica.log
        sent = answer.sent
        if not follower.accepts_answer(
            answer.leader_id, sent.current_leader_epoch, sent.fetch_offset, log.log_end_offset
        ):
            return True  # an answer to an older fetch state
        if answer.error == ErrorCode.OFFSET_OUT_OF_RANGE:
            return self._recover_out_of_range(replica, answer)
        if answer.error != ErrorCode.NONE:
            self._log.debug("fetch_partition_error", partition=str(replica.tp), error=answer.error.name)
            return False
        if answer.diverging is not None:
            local_end = EpochEndOffset(*log.end_offset_for_epoch(answer.diverging.epoch))
            truncation = follower.truncation(answer.diverging, local_end, log.log_end_offset)
            reason = f"{truncation.reason}: leader epoch {answer.diverging.epoch} ends at {answer.diverging.end_offset}"
            try:
                log.truncate_to(truncation.offset, reason=reason)
            except KafkaError as error:
                self._log.warning("follower_truncate_failed", partition=str(replica.tp), error=error.message)
                return False
            replica.role = follower.on_truncate(log.log_end_offset)
            return True
        if answer.records and not self._append_as_follower(replica, answer.records):
            return False
        replica.role = follower.on_fetch_response(answer.high_watermark, log.log_end_offset)
        log.high_watermark = replica.role.high_watermark
        return self._follow_log_start(replica, answer.log_start_offset)

    def _follow_log_start(self, replica: Replica, leader_log_start_offset: int) -> bool:
        """The leader's log start moved (DeleteRecords, retention): this replica's follows, never past its own high
        watermark (Kafka's maybeIncrementLogStartOffset with LeaderOffsetIncremented)."""
        offset = min(leader_log_start_offset, replica.log.high_watermark)
        if offset <= replica.log.log_start_offset:
            return True
        try:
            replica.log.delete_before(offset, reason="leader_offset_incremented")
        except KafkaError as error:
            self._log.warning("follower_log_start_failed", partition=str(replica.tp), error=error.message)
            return False
        return True

    def _recover_out_of_range(self, replica: Replica, answer: FollowerAnswer) -> bool:
        """Carry out the follower core's recovery from an OFFSET_OUT_OF_RANGE answer."""
        log, follower = replica.log, replica.follower
        assert follower is not None
        fetch_offset = answer.sent.fetch_offset
        recovery = follower.out_of_range_recovery(fetch_offset, answer.log_start_offset, answer.high_watermark)
        if recovery is None:
            return False  # the leader's range moved meanwhile: fetch again after a back-off
        try:
            if recovery.start_at is not None:
                log.truncate_fully_and_start_at(recovery.start_at, reason="offset_out_of_range")
            elif recovery.truncate_to is not None:
                log.truncate_to(recovery.truncate_to, reason="offset_out_of_range")
        except KafkaError as error:
            self._log.warning("follower_truncate_failed", partition=str(replica.tp), error=error.message)
            return False
        self._log.info(
            "follower_offset_out_of_range",
            partition=str(replica.tp),
            fetch_offset=fetch_offset,
            leader_log_start_offset=answer.log_start_offset,
            leader_high_watermark=answer.high_watermark,
            log_start_offset=log.log_start_offset,
            log_end_offset=log.log_end_offset,
        )
        replica.role = follower.on_truncate(log.log_end_offset)
        return True

    def _append_as_follower(self, replica: Replica, records: bytes | memoryview) -> bool:
        label = str(replica.tp)
        try:
            replica.log.append_as_follower(records, monotonic_ms())
        except KafkaError as error:
            if error.code is ErrorCode.CORRUPT_MESSAGE:
                # Not retried: the same fetch would bring the same bytes. Fetched again in a new leader epoch.
                replica.failed_in_epoch = replica.leader_epoch
                self._log.error(
                    "follower_partition_failed",
                    partition=label,
                    leader=replica.leader_id,
                    leader_epoch=replica.leader_epoch,
                    fetch_offset=replica.log.log_end_offset,
                    error=error.message,
                )
                return False
            if replica.append_failure != error.message:  # a failure repeating at every retry is logged once
                replica.append_failure = error.message
                self._log.warning("follower_append_failed", partition=label, error=error.message)
            return False
        if replica.append_failure is not None:
            replica.append_failure = None
            self._log.info("follower_append_recovered", partition=label, log_end_offset=replica.log.log_end_offset)
        return True

    def _ensure_fetcher(self, leader_id: int) -> None:
        task = self._fetchers.get(leader_id)
        if task is None or task.done():
            task = asyncio.create_task(run_fetcher(self, leader_id), name=f"fetcher-{leader_id}")
            task.add_done_callback(functools.partial(self._on_fetcher_done, leader_id))
            self._fetchers[leader_id] = task

    def _on_fetcher_done(self, leader_id: int, task: asyncio.Task[None]) -> None:
        """A fetcher never dies unheard: its error is an event, and a new one starts after a pause if its leader
        still leads partitions this broker follows."""
        if task.cancelled() or task.exception() is None:
            return
        self._log.error("replica_fetcher_failed", leader=leader_id, error=repr(task.exception()))
        asyncio.get_running_loop().call_later(FETCHER_RESTART_S, self._restart_fetcher, leader_id, task)

    def _restart_fetcher(self, leader_id: int, failed: asyncio.Task[None]) -> None:
        followed = any(r.follower is not None and r.leader_id == leader_id for r in self.replicas.values())
        if followed and self._fetchers.get(leader_id) is failed:
            self._ensure_fetcher(leader_id)

    def _stop_idle_fetchers(self) -> None:
        """A fetcher whose partitions all moved away stops (Kafka's shutdownIdleFetcherThreads)."""
        followed = {r.leader_id for r in self.replicas.values() if r.follower is not None}
        for leader_id in [leader for leader in self._fetchers if leader not in followed]:
            self._fetchers.pop(leader_id).cancel()

    async def stop(self) -> None:
        tasks = [*self._fetchers.values(), *([self._applier] if self._applier is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.alter_partition.stop()
        for replica in self.replicas.values():
            replica.produces.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER)


def _end_offset(records: bytes) -> int:
    """The offset after the last batch of a read (whole batches)."""
    end = -1
    for batch in iter_batches(records):
        end = batch.next_offset
    return end


def answered(value: T) -> asyncio.Future[T]:
    """An already-resolved future: an answer known without waiting."""
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    future.set_result(value)
    return future
