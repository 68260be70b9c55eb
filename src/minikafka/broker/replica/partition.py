"""One partition replica's replication logic (Kafka's Partition), pure: roles, ISR decisions, HWM, acks=all.

A replica is a `Leader` or a `Follower` (frozen values). The leader's ISR state is Kafka's `PartitionState` sum
type: `Committed`, or one AlterPartition in flight (`PendingExpandIsr` / `PendingShrinkIsr`). The HWM is the minimum
LEO over the Maximal ISR (the committed ISR plus a member being added) and does not move while the committed ISR is
smaller than min(min.insync.replicas, RF). A follower joins only when its fetch offset reaches the HWM and the
leader epoch start offset (LESO), it fetched in this leader epoch, and the broker epoch its Fetch carried equals the
one the metadata shows for it (KIP-903). A metadata update with a higher partition epoch always wins over a late
AlterPartition response; a lower one is ignored.

Every operation takes the time as `now_ms` where it needs it and returns the new value plus effects for the shell
(send an AlterPartition, start or stop fetching, fail waiting produces); the shell keeps the returned role.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from minikafka.broker.replica.divergence import EpochEndOffset, FollowerTruncation, follower_truncation
from minikafka.broker.replica.replica_state import ReplicaState
from minikafka.common.errors import ErrorCode
from minikafka.common.evolve import evolve
from minikafka.kraft_controller.metadata.records import LeaderRecoveryState

ACKS_ALL = -1

# Answers that say the controller has moved on, or will never take this request: keep the proposal pending (no new
# one) until new metadata arrives. INVALID_REQUEST is among them, as in Kafka: the request may have been built on
# stale metadata, and only new metadata says what the ISR is.
WAIT_FOR_METADATA = frozenset(
    {
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)
# Answers that say the change was certainly not applied, with our epochs current: safe to roll back.
ROLL_BACK = frozenset({ErrorCode.INELIGIBLE_REPLICA})
UNKNOWN_LEADER_EPOCH = -1  # a client that does not know the leader epoch sends -1 and is not fenced
UNKNOWN_BROKER_EPOCH = -1  # a member that has not fetched from this leader: the controller skips its epoch check


# ---- values exchanged with the shell ----


@dataclass(frozen=True)
class PartitionConfig:
    min_insync_replicas: int = 1  # min.insync.replicas
    replica_lag_time_max_ms: int = 30_000  # replica.lag.time.max.ms
    # KIP-966's strict min ISR rule (eligible.leader.replicas.version 1): the HWM waits while the ISR is below min
    # ISR, so a replica leaving such an ISR holds every committed record. Off, as Kafka 3.x, a sole leader commits.
    strict_min_isr: bool = True


@dataclass(frozen=True)
class PartitionMetadata:
    """The partition as the metadata image shows it (a PartitionRecord plus its PartitionChanges)."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int  # -1: no leader
    leader_epoch: int
    partition_epoch: int
    # RECOVERING after an unclean election until the leader's next committed AlterPartition says RECOVERED.
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED


@dataclass(frozen=True)
class BrokerState:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class AlterPartitionProposal:
    """One AlterPartition v3 partition entry the leader asks the controller to commit."""

    leader_epoch: int
    partition_epoch: int
    new_isr_with_epochs: tuple[BrokerState, ...]
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED

    @property
    def isr(self) -> frozenset[int]:
        return frozenset(state.broker_id for state in self.new_isr_with_epochs)


@dataclass(frozen=True)
class AlterPartitionResult:
    """The controller's answer for one partition; isr/epochs are meaningful when error is NONE."""

    error: ErrorCode
    isr: tuple[int, ...] = ()
    leader_epoch: int = -1
    partition_epoch: int = -1


# ---- the ISR state (Kafka's PartitionState) ----


@dataclass(frozen=True)
class Committed:
    isr: frozenset[int]

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr


@dataclass(frozen=True)
class PendingExpandIsr:
    isr: frozenset[int]  # the committed ISR
    adding: int
    proposal: AlterPartitionProposal

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr | {self.adding}  # assume success: the HWM waits for the new member too


@dataclass(frozen=True)
class PendingShrinkIsr:
    isr: frozenset[int]  # the committed ISR, still counted until the controller commits the shrink
    removing: frozenset[int]
    proposal: AlterPartitionProposal

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr


PartitionState = Committed | PendingExpandIsr | PendingShrinkIsr
IsrState = PartitionState


# ---- effects ----


@dataclass(frozen=True)
class SendAlterPartition:
    proposal: AlterPartitionProposal


@dataclass(frozen=True)
class StartFetching:
    """Add the partition to the fetcher for `leader_id` (from our LEO, in the new leader's epoch)."""

    leader_id: int
    leader_epoch: int
    fetch_offset: int


@dataclass(frozen=True)
class StopFetching:
    pass


@dataclass(frozen=True)
class FailPendingProduces:
    error: ErrorCode


@dataclass(frozen=True)
class AssignEpochStartOffset:
    """Cache (leader epoch, start offset) in the log's leader-epoch cache now, before any append in the epoch.

    Without it a new leader that has appended nothing cannot define the end of a follower's newer epoch, and
    answers an undefined divergence (Kafka's Partition.makeLeader does the same)."""

    leader_epoch: int
    start_offset: int


Effect = SendAlterPartition | StartFetching | StopFetching | FailPendingProduces | AssignEpochStartOffset


@dataclass(frozen=True)
class OutOfRangeRecovery:
    """A follower fetching outside the leader's log: start a new log at `start_at`, or cut ours to `truncate_to`."""

    start_at: int | None = None
    truncate_to: int | None = None


# ---- roles ----


@dataclass(frozen=True)
class Follower:
    label: str
    broker_id: int
    leader_id: int
    replicas: tuple[int, ...]
    isr: frozenset[int]
    leader_epoch: int
    partition_epoch: int
    log_end_offset: int
    high_watermark: int

    def accepts_answer(self, leader_id: int, leader_epoch: int, fetch_offset: int, log_end_offset: int) -> bool:
        """A Fetch answer applies only to the fetch state it was asked for: the same leader and leader epoch, and
        our log still ending at its fetch offset (it may have been truncated while the Fetch was in flight)."""
        return leader_id == self.leader_id and leader_epoch == self.leader_epoch and fetch_offset == log_end_offset

    def truncation(
        self, diverging: EpochEndOffset, local_end: EpochEndOffset, log_end_offset: int
    ) -> FollowerTruncation:
        """Where to cut our log for the leader's diverging-epoch answer to a Fetch at our log end."""
        return follower_truncation(diverging, local_end, log_end_offset, fetch_offset=log_end_offset)

    def out_of_range_recovery(
        self, fetch_offset: int, leader_log_start_offset: int, leader_high_watermark: int
    ) -> OutOfRangeRecovery | None:
        """Kafka's handleOutOfRangeError for an OFFSET_OUT_OF_RANGE answer: behind the leader's log start
        (retention deleted what we lack), start over at it; ahead of the leader (it lost data we hold), cut back to
        its high watermark, the most the answer vouches for (Kafka asks for the leader's log end). None: the
        leader's range moved meanwhile, fetch again."""
        if 0 <= fetch_offset < leader_log_start_offset:
            return OutOfRangeRecovery(start_at=leader_log_start_offset)
        if fetch_offset > leader_high_watermark >= 0:
            return OutOfRangeRecovery(truncate_to=leader_high_watermark)
        return None

    def on_fetch_response(self, leader_high_watermark: int, log_end_offset: int) -> Follower:
        """After appending what the leader sent: a follower's HWM is the leader's, capped by its own LEO. Like
        Kafka's follower it takes the leader's value even when lower (a new leader's HWM may lag the old one's)."""
        return evolve(self, log_end_offset=log_end_offset, high_watermark=min(leader_high_watermark, log_end_offset))

    def on_truncate(self, log_end_offset: int) -> Follower:
        return evolve(self, log_end_offset=log_end_offset, high_watermark=min(self.high_watermark, log_end_offset))


@dataclass(frozen=True)
class Leader:
    label: str
    broker_id: int
    broker_epoch: int
    replicas: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    isr_state: PartitionState
    log_end_offset: int
    high_watermark: int
    leader_epoch_start_offset: int
    config: PartitionConfig
    followers: tuple[ReplicaState, ...]  # one per other replica, by replica id
    # The epochs of the brokers eligible for the ISR, as the metadata showed them at the latest follower fetch.
    eligible_broker_epochs: Mapping[int, int] = field(default_factory=dict)

    @property
    def isr(self) -> frozenset[int]:
        return self.isr_state.isr

    @property
    def effective_min_isr(self) -> int:
        """min.insync.replicas capped at the replication factor, as Kafka's effectiveMinIsr."""
        return min(self.config.min_insync_replicas, len(self.replicas))

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr_state.maximal_isr

    def follower(self, replica_id: int) -> ReplicaState | None:
        for state in self.followers:
            if state.replica_id == replica_id:
                return state
        return None

    def _with_follower(self, state: ReplicaState) -> Leader:
        return evolve(self, followers=tuple(state if f.replica_id == state.replica_id else f for f in self.followers))

    # ---- the HWM ----

    def _advance_high_watermark(self, now_ms: int) -> tuple[Leader, bool]:
        """The HWM is the lowest LEO over the Maximal ISR and the caught-up followers about to join it (Kafka's
        shouldWaitForReplicaToJoinIsr): without the latter, a follower out of the ISR never reaches a HWM that
        steady writes keep moving, and never rejoins."""
        if self.config.strict_min_isr and len(self.isr) < self.effective_min_isr:
            return self, False
        candidate = self.log_end_offset
        for member in self.maximal_isr - {self.broker_id}:
            state = self.follower(member)
            candidate = min(candidate, state.log_end_offset if state is not None else -1)
        for state in self.followers:
            if state.replica_id not in self.maximal_isr and self._waits_to_join(state, now_ms):
                candidate = min(candidate, state.log_end_offset)
        if candidate > self.high_watermark:
            return evolve(self, high_watermark=candidate), True
        return self, False

    def _waits_to_join(self, state: ReplicaState, now_ms: int) -> bool:
        caught_up = state.is_caught_up(self.log_end_offset, now_ms, self.config.replica_lag_time_max_ms)
        eligible = state.broker_epoch >= 0 and self.eligible_broker_epochs.get(state.replica_id) == state.broker_epoch
        return caught_up and eligible and state.replica_id in self.replicas

    def on_time_passed(self, now_ms: int, metadata_broker_epochs: Mapping[int, int]) -> tuple[Leader, bool]:
        """The HWM looked at again with the clock and the brokers' registrations as they are now (new state, whether
        it moved): a follower the HWM waited for may have stopped being caught up, or been fenced, while no append
        or fetch came to say so (a producer waiting on this very HWM sends nothing more)."""
        return evolve(self, eligible_broker_epochs=metadata_broker_epochs)._advance_high_watermark(now_ms)

    def on_local_append(self, log_end_offset: int, now_ms: int) -> tuple[Leader, bool]:
        """Our log grew to `log_end_offset`; (new state, whether the HWM moved)."""
        return evolve(self, log_end_offset=log_end_offset)._advance_high_watermark(now_ms)

    # ---- reads and offsets ----

    def check_current_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        """Kafka's checkCurrentLeaderEpoch: the requester's view of the leader epoch; -1 says it has none."""
        if current_leader_epoch == UNKNOWN_LEADER_EPOCH or current_leader_epoch == self.leader_epoch:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        return ErrorCode.UNKNOWN_LEADER_EPOCH

    def consumer_read(self, fetch_offset: int, log_start_offset: int, current_leader_epoch: int) -> ConsumerRead:
        """What a consumer's Fetch at `fetch_offset` may read: only below the HWM."""
        code = self.check_current_leader_epoch(current_leader_epoch)
        if code == ErrorCode.NONE and not log_start_offset <= fetch_offset <= self.log_end_offset:
            code = ErrorCode.OFFSET_OUT_OF_RANGE
        readable = code == ErrorCode.NONE and fetch_offset < self.high_watermark
        return ConsumerRead(code, self.high_watermark, self.high_watermark if readable else None)

    def latest_offset(self, current_leader_epoch: int) -> ListedOffset:
        """ListOffsets(LATEST): the HWM, unless a new leader's HWM has not yet reached its epoch start offset
        (Kafka answers OFFSET_NOT_AVAILABLE then, so "latest" never goes back across a leader change)."""
        code = self.check_current_leader_epoch(current_leader_epoch)
        if code != ErrorCode.NONE:
            return ListedOffset(code)
        if self.leader_epoch_start_offset > self.high_watermark:
            return ListedOffset(ErrorCode.OFFSET_NOT_AVAILABLE)
        return ListedOffset(ErrorCode.NONE, self.high_watermark, self.leader_epoch)

    # ---- follower fetches ----

    def on_follower_fetch(
        self,
        replica_id: int,
        replica_epoch: int,
        fetch_leader_epoch: int,
        fetch_offset: int,
        metadata_broker_epochs: Mapping[int, int],
        now_ms: int,
    ) -> FetchDecision:
        """A follower's Fetch (after the shell checked the leader epoch and divergence).

        `metadata_broker_epochs`: the epoch of every broker the metadata shows registered, unfenced and not
        shutting down; only those can join the ISR.
        """
        replica = self.follower(replica_id)
        if replica is None:
            return FetchDecision(self, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        # Only the metadata sets the bar (KIP-903, Kafka's updateFetchStateOrThrow): a Fetch claiming a higher epoch
        # than the metadata's must not lock the real follower out.
        expected = metadata_broker_epochs.get(replica_id, -1)
        if replica_epoch != UNKNOWN_BROKER_EPOCH and replica_epoch < expected:
            # An older incarnation of the follower (KIP-903): its fetch offset says nothing about its log now.
            structlog.get_logger().warning(
                "fetch_rejected_stale_broker_epoch",
                partition=self.label,
                replica_id=replica_id,
                expected_epoch=expected,
                actual_epoch=replica_epoch,
            )
            return FetchDecision(self, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if fetch_offset > self.log_end_offset:
            return FetchDecision(self, ErrorCode.OFFSET_OUT_OF_RANGE)
        replica = replica.on_fetch(fetch_offset, self.log_end_offset, replica_epoch, fetch_leader_epoch, now_ms)
        state = evolve(self._with_follower(replica), eligible_broker_epochs=metadata_broker_epochs)
        state, proposal = state._maybe_expand(replica, metadata_broker_epochs)
        state, moved = state._advance_high_watermark(now_ms)
        return FetchDecision(state, ErrorCode.NONE, moved, proposal)

    def on_idle_fetches(self, fetched_ms: Mapping[int, int]) -> Leader:
        """Followers' Fetches that skipped this partition as settled (by replica id: the latest such Fetch's
        time), counted as caught up then without a read (see ReplicaState.on_idle_fetch)."""
        followers = tuple(
            state.on_idle_fetch(self.log_end_offset, fetched_ms[state.replica_id])
            if state.replica_id in fetched_ms
            else state
            for state in self.followers
        )
        return self if followers == self.followers else evolve(self, followers=followers)

    def follower_settled(self, replica_id: int, metadata_broker_epochs: Mapping[int, int]) -> bool:
        """The follower is at our log end and there is nothing to decide for it: it is in the committed ISR, in the
        ISR expansion we asked for, or not eligible to join (its broker fenced, in controlled shutdown or of
        another epoch in the metadata). Until our log, its fetch state or the partition (the controller's answer
        included) changes, or its eligibility does, its Fetches need not read this partition. A rejoining broker's
        thousands of partitions are then not read again at each of its Fetches while it is fenced, nor while their
        expansions wait to be committed."""
        state = self.follower(replica_id)
        if state is None or state.log_end_offset != self.log_end_offset:
            return False
        pending = self.isr_state
        if replica_id in self.isr or (isinstance(pending, PendingExpandIsr) and pending.adding == replica_id):
            return True
        # Not eligible in the metadata, or of an epoch it does not know yet: a change of the metadata reads it again.
        # A Fetch of an older epoch than the metadata's is not settled: the broker registered again, and its next
        # Fetch, of the new epoch, decides the expansion.
        known = metadata_broker_epochs.get(replica_id)
        return known is None or known < state.broker_epoch

    def _maybe_expand(
        self, replica: ReplicaState, metadata_broker_epochs: Mapping[int, int]
    ) -> tuple[Leader, AlterPartitionProposal | None]:
        committed = self.isr_state
        if not isinstance(committed, Committed) or replica.replica_id in committed.isr:
            return self, None
        if replica.replica_id not in self.replicas:
            return self, None
        if replica.log_end_offset < self.high_watermark or replica.log_end_offset < self.leader_epoch_start_offset:
            return self, None
        if replica.fetch_leader_epoch != self.leader_epoch:
            return self, None
        if metadata_broker_epochs.get(replica.replica_id) != replica.broker_epoch:
            return self, None  # KIP-903: the metadata must agree with the epoch the follower fetched with
        proposal = self._proposal(committed.isr | {replica.replica_id}, metadata_broker_epochs)
        structlog.get_logger().info(
            "isr_expand_proposed",
            partition=self.label,
            isr=sorted(committed.isr),
            proposed_isr_with_epochs=[(s.broker_id, s.broker_epoch) for s in proposal.new_isr_with_epochs],
            adding=replica.replica_id,
            fetch_offset=replica.log_end_offset,
            high_watermark=self.high_watermark,
            leader_epoch_start_offset=self.leader_epoch_start_offset,
        )
        return evolve(self, isr_state=PendingExpandIsr(committed.isr, replica.replica_id, proposal)), proposal

    def maybe_shrink_isr(
        self, now_ms: int, metadata_broker_epochs: Mapping[int, int]
    ) -> tuple[Leader, AlterPartitionProposal | None]:
        """Propose removing followers not caught up for longer than replica.lag.time.max.ms."""
        committed = self.isr_state
        if not isinstance(committed, Committed):
            return self, None
        lagging: dict[int, int] = {}
        for member in committed.isr:
            if member == self.broker_id:
                continue
            state = self.follower(member)
            lag_max = self.config.replica_lag_time_max_ms
            if state is None or not state.is_caught_up(self.log_end_offset, now_ms, lag_max):
                lagging[member] = now_ms - state.last_caught_up_ms if state is not None else -1
        if not lagging:
            return self, None
        proposal = self._proposal(committed.isr - lagging.keys(), metadata_broker_epochs)
        structlog.get_logger().info(
            "isr_shrink_proposed",
            partition=self.label,
            isr=sorted(committed.isr),
            proposed_isr_with_epochs=[(s.broker_id, s.broker_epoch) for s in proposal.new_isr_with_epochs],
            removing=sorted(lagging),
            lag_ms=lagging,
            replica_lag_time_max_ms=self.config.replica_lag_time_max_ms,
        )
        pending = PendingShrinkIsr(committed.isr, frozenset(lagging), proposal)
        return evolve(self, isr_state=pending), proposal

    def _proposal(self, members: frozenset[int], metadata_broker_epochs: Mapping[int, int]) -> AlterPartitionProposal:
        def epoch_of(member: int) -> int:
            if member == self.broker_id:
                return self.broker_epoch
            state = self.follower(member)
            # The epoch its Fetch proved; unknown (-1) for a member that has not fetched from us yet, as in Kafka.
            return state.broker_epoch if state is not None else UNKNOWN_BROKER_EPOCH

        states = tuple(BrokerState(m, epoch_of(m)) for m in sorted(members))
        # A leader holds its partition RECOVERED from the moment it leads (there is no log recovery to wait for), so
        # every proposal says so; it sends none for that alone: the controller learns it with the next ISR change.
        return AlterPartitionProposal(self.leader_epoch, self.partition_epoch, states, LeaderRecoveryState.RECOVERED)

    # ---- AlterPartition answers ----

    def on_alter_partition_response(
        self, proposal: AlterPartitionProposal, result: AlterPartitionResult, now_ms: int
    ) -> tuple[Leader, tuple[Effect, ...]]:
        """Apply the controller's answer to `proposal`; may return a SendAlterPartition effect to retry it."""
        pending = self.isr_state
        if isinstance(pending, Committed) or pending.proposal != proposal:
            return self, ()  # new metadata already replaced this proposal
        log = structlog.get_logger()
        if result.error == ErrorCode.NONE:
            if result.leader_epoch != self.leader_epoch or result.partition_epoch < self.partition_epoch:
                return self, ()  # late: metadata with a newer partition epoch wins
            state = evolve(self, isr_state=Committed(frozenset(result.isr)), partition_epoch=result.partition_epoch)
            log.info(
                "isr_committed",
                partition=self.label,
                isr=sorted(result.isr),
                leader_epoch=result.leader_epoch,
                partition_epoch=result.partition_epoch,
                source="alter_partition",
            )
            state, _moved = state._advance_high_watermark(now_ms)
            return state, ()
        if result.error in ROLL_BACK:
            log.info(
                "isr_rolled_back",
                partition=self.label,
                error=result.error.name,
                proposed=sorted(proposal.isr),
                committed=sorted(pending.isr),
            )
            return evolve(self, isr_state=Committed(pending.isr)), ()
        if result.error in WAIT_FOR_METADATA:
            log.info(
                "isr_change_awaiting_metadata",
                partition=self.label,
                error=result.error.name,
                proposed=sorted(proposal.isr),
                committed=sorted(pending.isr),
                partition_epoch=self.partition_epoch,
            )
            return self, ()
        # The outcome is unknown (timeout, controller moved): the change may have been applied, so the HWM keeps
        # counting the pending state and the same request is sent again.
        return self, (SendAlterPartition(proposal),)

    # ---- produce ----

    def check_produce(self, acks: int) -> ErrorCode:
        """Before appending: acks=all needs the committed ISR at min.insync.replicas (capped at the RF)."""
        required = self.effective_min_isr
        if acks == ACKS_ALL and len(self.isr) < required:
            structlog.get_logger().info(
                "produce_rejected_not_enough_replicas",
                partition=self.label,
                expected_min_isr=required,
                actual_isr=sorted(self.isr),
            )
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return ErrorCode.NONE


@dataclass(frozen=True)
class ConsumerRead:
    error: ErrorCode
    high_watermark: int
    read_below: int | None  # read records up to this offset (exclusive); None: nothing to read now


@dataclass(frozen=True)
class ListedOffset:
    error: ErrorCode
    offset: int = -1
    leader_epoch: int = -1
    timestamp: int = -1  # of the record found by a timestamp lookup; -1 for the log start, the HWM or nothing


@dataclass(frozen=True)
class FetchDecision:
    state: Leader
    error: ErrorCode
    high_watermark_changed: bool = False
    proposal: AlterPartitionProposal | None = None


Role = Leader | Follower


@dataclass(frozen=True)
class Transition:
    state: Role
    effects: tuple[Effect, ...] = ()


@dataclass(frozen=True)
class LeaderTransition:
    """A transition that keeps this broker the leader: its state is a Leader."""

    state: Leader
    effects: tuple[Effect, ...] = ()


# ---- role transitions ----


def make_leader(
    label: str,
    broker_id: int,
    broker_epoch: int,
    metadata: PartitionMetadata,
    log_end_offset: int,
    high_watermark: int,
    config: PartitionConfig,
    now_ms: int,
) -> Transition:
    """Follower (or nothing) -> leader: stop fetching, clear follower state, LESO = our LEO."""
    isr = frozenset(metadata.isr)
    followers = tuple(ReplicaState.for_new_leader(r, r in isr, now_ms) for r in metadata.replicas if r != broker_id)
    leader = Leader(
        label=label,
        broker_id=broker_id,
        broker_epoch=broker_epoch,
        replicas=metadata.replicas,
        leader_epoch=metadata.leader_epoch,
        partition_epoch=metadata.partition_epoch,
        isr_state=Committed(isr),
        log_end_offset=log_end_offset,
        high_watermark=min(high_watermark, log_end_offset),
        leader_epoch_start_offset=log_end_offset,
        config=config,
        followers=followers,
    )
    leader, _moved = leader._advance_high_watermark(now_ms)  # an ISR of just us moves the HWM to our LEO
    _log_role("become_leader", leader.label, metadata, log_end_offset)
    return Transition(leader, (StopFetching(), AssignEpochStartOffset(metadata.leader_epoch, log_end_offset)))


def make_follower(
    label: str, broker_id: int, metadata: PartitionMetadata, log_end_offset: int, high_watermark: int
) -> Transition:
    """-> follower: fetch from the new leader from our LEO, in its epoch."""
    follower = Follower(
        label=label,
        broker_id=broker_id,
        leader_id=metadata.leader,
        replicas=metadata.replicas,
        isr=frozenset(metadata.isr),
        leader_epoch=metadata.leader_epoch,
        partition_epoch=metadata.partition_epoch,
        log_end_offset=log_end_offset,
        high_watermark=min(high_watermark, log_end_offset),
    )
    _log_role("become_follower", label, metadata, None)
    effects: tuple[Effect, ...] = (StopFetching(),)
    if metadata.leader >= 0:
        effects += (StartFetching(metadata.leader, metadata.leader_epoch, log_end_offset),)
    return Transition(follower, effects)


def apply_metadata(
    current: Role | None,
    label: str,
    broker_id: int,
    broker_epoch: int,
    metadata: PartitionMetadata,
    log_end_offset: int,
    high_watermark: int,
    config: PartitionConfig,
    now_ms: int,
    eligible_broker_epochs: Mapping[int, int] | None = None,
) -> Transition | None:
    """A partition change from the metadata; None when it is ignored (older partition epoch than we know).

    `eligible_broker_epochs`: the brokers the metadata shows unfenced and not shutting down (None: keep what the
    leader knew). A follower fenced since its last Fetch no longer holds the HWM back as about to join the ISR.
    """
    if _nothing_new(current, label, broker_id, metadata):
        return None
    if metadata.leader != broker_id:
        return _as_follower(current, label, broker_id, metadata, log_end_offset, high_watermark)
    if not isinstance(current, Leader):
        return make_leader(label, broker_id, broker_epoch, metadata, log_end_offset, high_watermark, config, now_ms)
    if metadata.leader_epoch > current.leader_epoch:
        transition = _leader_in_new_epoch(current, label, broker_id, broker_epoch, metadata, log_end_offset, now_ms)
    else:
        transition = _leader_in_same_epoch(current, label, broker_id, metadata, log_end_offset, now_ms)
    leader = evolve(transition.state, config=config)
    if eligible_broker_epochs is not None:
        leader = evolve(leader, eligible_broker_epochs=eligible_broker_epochs)
    leader, _moved = leader._advance_high_watermark(now_ms)
    return Transition(leader, transition.effects)


def reconfigure(current: Leader, config: PartitionConfig, now_ms: int) -> tuple[Leader, bool]:
    """The leader under a changed dynamic config (min.insync.replicas): (new state, whether the HWM moved). A lower
    min ISR may let the HWM advance at once; a higher one stops it until the ISR grows."""
    return evolve(current, config=config)._advance_high_watermark(now_ms)


def _nothing_new(current: Role | None, label: str, broker_id: int, metadata: PartitionMetadata) -> bool:
    """An update older than what we know (logged), or one that changes nothing for us."""
    if current is None:
        return False
    if metadata.partition_epoch < current.partition_epoch:
        structlog.get_logger().info(
            "partition_update_ignored",
            partition=label,
            known_partition_epoch=current.partition_epoch,
            update_partition_epoch=metadata.partition_epoch,
        )
        return True
    # The same epochs and role: an in-flight proposal must not be mistaken for rejected.
    return (
        metadata.partition_epoch == current.partition_epoch
        and metadata.leader_epoch == current.leader_epoch
        and (metadata.leader == broker_id) == isinstance(current, Leader)
    )


def _as_follower(
    current: Role | None,
    label: str,
    broker_id: int,
    metadata: PartitionMetadata,
    log_end_offset: int,
    high_watermark: int,
) -> Transition:
    if isinstance(current, Follower) and current.leader_epoch == metadata.leader_epoch:
        # The same leader epoch: ISR changes are immaterial to a follower.
        return Transition(evolve(current, isr=frozenset(metadata.isr), partition_epoch=metadata.partition_epoch))
    transition = make_follower(label, broker_id, metadata, log_end_offset, high_watermark)
    if isinstance(current, Leader):
        failed = FailPendingProduces(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        return Transition(transition.state, (failed, *transition.effects))
    return transition


def _leader_in_new_epoch(
    current: Leader,
    label: str,
    broker_id: int,
    broker_epoch: int,
    metadata: PartitionMetadata,
    log_end_offset: int,
    now_ms: int,
) -> LeaderTransition:
    """Leader again in a new epoch (elected again or reassigned): new LESO, and followers out of the ISR must
    fetch in this epoch before they can join."""
    isr = frozenset(metadata.isr)
    known = {f.replica_id: f for f in current.followers}
    followers = tuple(
        known[r].for_new_leader_epoch(r in isr, log_end_offset, now_ms)
        if r in known
        else ReplicaState.for_new_leader(r, r in isr, now_ms)
        for r in metadata.replicas
        if r != broker_id
    )
    leader = evolve(
        current,
        broker_epoch=broker_epoch,
        replicas=metadata.replicas,
        leader_epoch=metadata.leader_epoch,
        partition_epoch=metadata.partition_epoch,
        isr_state=Committed(isr),
        log_end_offset=log_end_offset,
        leader_epoch_start_offset=log_end_offset,
        followers=followers,
    )
    _log_role("become_leader", label, metadata, log_end_offset)
    return LeaderTransition(leader, (AssignEpochStartOffset(metadata.leader_epoch, log_end_offset),))


def _leader_in_same_epoch(
    current: Leader, label: str, broker_id: int, metadata: PartitionMetadata, log_end_offset: int, now_ms: int
) -> LeaderTransition:
    """The same epoch: an ISR change may let the HWM advance."""
    isr = frozenset(metadata.isr)
    known = {f.replica_id: f for f in current.followers}
    followers = tuple(
        known.get(r, ReplicaState.for_new_leader(r, False, now_ms)) for r in metadata.replicas if r != broker_id
    )
    leader = evolve(
        current,
        replicas=metadata.replicas,
        partition_epoch=metadata.partition_epoch,
        isr_state=Committed(isr),
        log_end_offset=log_end_offset,
        followers=followers,
    )
    if isr != current.isr or not isinstance(current.isr_state, Committed):
        structlog.get_logger().info(
            "isr_committed",
            partition=label,
            isr=sorted(isr),
            leader_epoch=metadata.leader_epoch,
            partition_epoch=metadata.partition_epoch,
            source="metadata",
        )
    return LeaderTransition(leader)


def _log_role(event: str, label: str, metadata: PartitionMetadata, leader_epoch_start_offset: int | None) -> None:
    structlog.get_logger().info(
        event,
        partition=label,
        leader=metadata.leader,
        leader_epoch=metadata.leader_epoch,
        partition_epoch=metadata.partition_epoch,
        isr=sorted(metadata.isr),
        leader_epoch_start_offset=leader_epoch_start_offset,
        leader_recovery_state=metadata.leader_recovery_state.name,  # a leader taking RECOVERING holds it RECOVERED
    )
