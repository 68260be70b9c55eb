"""A partition's leader-side replication state (Kafka's Partition), pure: ISR decisions, HWM, acks=all checks.

The ISR state is a sum type: Committed, or one AlterPartition in flight (PendingExpandIsr / PendingShrinkIsr).
The HWM is the minimum LEO over the Maximal ISR (committed ISR plus a member being added), and does not move
while the committed ISR is smaller than min(min.insync.replicas, RF). A follower joins only when its fetch offset
reaches the HWM and the leader epoch start offset, it fetched in this leader epoch, and the broker epoch its Fetch
carries equals the one the metadata shows for it (KIP-903). A metadata update with a higher partition epoch always
wins over a late AlterPartition response.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import structlog

from common.errors import ErrorCode

# AlterPartition answers after which the leader waits for new metadata rather than retrying.
WAIT_FOR_METADATA = frozenset(
    {
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)


@dataclass(frozen=True)
class BrokerState:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class AlterPartitionProposal:
    """One AlterPartition v3 partition entry the leader wants the controller to commit."""

    leader_epoch: int
    partition_epoch: int
    new_isr_with_epochs: tuple[BrokerState, ...]

    @property
    def isr(self) -> frozenset[int]:
        return frozenset(state.broker_id for state in self.new_isr_with_epochs)


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
    isr: frozenset[int]
    removing: frozenset[int]
    proposal: AlterPartitionProposal

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr  # until committed, the removed members still count


IsrState = Committed | PendingExpandIsr | PendingShrinkIsr


@dataclass
class ReplicaState:
    """What the leader knows of one follower, from its Fetch requests."""

    log_end_offset: int = 0
    last_fetch_ms: int = -1
    last_caught_up_ms: int = -1
    broker_epoch: int = -1  # replica_state.replica_epoch of the latest Fetch
    fetch_leader_epoch: int = -1  # the leader epoch it last fetched in
    last_fetch_leader_log_end_offset: int = 0  # our LEO at its previous fetch (Kafka's lastCaughtUp rule)


@dataclass(frozen=True)
class FetchDecision:
    error: ErrorCode
    high_watermark_changed: bool = False
    proposal: AlterPartitionProposal | None = None


@dataclass
class PartitionLeaderState:
    label: str
    broker_id: int
    broker_epoch: int
    replicas: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    isr_state: IsrState
    log_end_offset: int
    high_watermark: int
    leader_epoch_start_offset: int
    min_insync_replicas: int
    replica_lag_time_max_ms: int
    followers: dict[int, ReplicaState] = field(default_factory=dict)
    waiting_for_metadata: bool = False

    def __post_init__(self) -> None:
        self._log = structlog.get_logger().bind(partition=self.label)

    @classmethod
    def become_leader(
        cls,
        label: str,
        broker_id: int,
        broker_epoch: int,
        replicas: tuple[int, ...],
        isr: tuple[int, ...],
        leader_epoch: int,
        partition_epoch: int,
        log_end_offset: int,
        high_watermark: int,
        min_insync_replicas: int,
        replica_lag_time_max_ms: int,
        now_ms: int,
    ) -> PartitionLeaderState:
        """Follower -> leader: LESO is our LEO; follower states start over (seed 004 §2.10)."""
        state = cls(
            label,
            broker_id,
            broker_epoch,
            replicas,
            leader_epoch,
            partition_epoch,
            Committed(frozenset(isr)),
            log_end_offset,
            high_watermark,
            log_end_offset,
            min_insync_replicas,
            replica_lag_time_max_ms,
        )
        for replica in replicas:
            if replica != broker_id:
                # ISR members get the benefit of the doubt for one lag period, as Kafka resets lastCaughtUpTime.
                caught_up = now_ms if replica in isr else -1
                state.followers[replica] = ReplicaState(last_caught_up_ms=caught_up)
        state._log.info(
            "become_leader",
            leader_epoch=leader_epoch,
            partition_epoch=partition_epoch,
            leader_epoch_start_offset=log_end_offset,
            isr=sorted(isr),
        )
        return state

    # ---- metadata ----

    def apply_metadata(
        self, replicas: tuple[int, ...], isr: tuple[int, ...], leader_epoch: int, partition_epoch: int, now_ms: int
    ) -> None:
        """A committed partition change where we stay leader; older partition epochs are ignored."""
        if partition_epoch < self.partition_epoch:
            return
        if leader_epoch > self.leader_epoch:
            # A new leader epoch for us: out-of-sync followers must fetch again before they can rejoin.
            for replica_id, replica in self.followers.items():
                if replica_id not in isr:
                    replica.last_fetch_ms = -1
            self.leader_epoch_start_offset = self.log_end_offset
        self.replicas = replicas
        self.leader_epoch = leader_epoch
        self.partition_epoch = partition_epoch
        self.isr_state = Committed(frozenset(isr))
        self.waiting_for_metadata = False
        for replica in replicas:
            if replica != self.broker_id:
                self.followers.setdefault(replica, ReplicaState())
        self._log.info(
            "isr_committed",
            isr=sorted(isr),
            leader_epoch=leader_epoch,
            partition_epoch=partition_epoch,
            source="metadata",
        )
        self.maybe_advance_high_watermark()

    # ---- the HWM ----

    def maybe_advance_high_watermark(self) -> bool:
        maximal = self.isr_state.maximal_isr
        if len(self.isr_state.isr) < min(self.min_insync_replicas, len(self.replicas)):
            return False
        offsets = [self.log_end_offset] + [
            self.followers[r].log_end_offset for r in maximal if r != self.broker_id and r in self.followers
        ]
        candidate = min(offsets)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def on_local_append(self, log_end_offset: int) -> bool:
        self.log_end_offset = log_end_offset
        return self.maybe_advance_high_watermark()

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
        replica = self.followers.get(replica_id)
        if replica is None:
            return FetchDecision(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if replica_epoch < replica.broker_epoch:
            self._log.warning(
                "fetch_rejected_stale_broker_epoch",
                replica_id=replica_id,
                expected_epoch=replica.broker_epoch,
                actual_epoch=replica_epoch,
            )
            return FetchDecision(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        # Kafka's lastCaughtUpTime: now if it reached our LEO, else the previous fetch time if it reached the LEO
        # we had then.
        if fetch_offset >= self.log_end_offset:
            replica.last_caught_up_ms = now_ms
        elif fetch_offset >= replica.last_fetch_leader_log_end_offset and replica.last_fetch_ms >= 0:
            replica.last_caught_up_ms = max(replica.last_caught_up_ms, replica.last_fetch_ms)
        replica.log_end_offset = fetch_offset
        replica.last_fetch_ms = now_ms
        replica.last_fetch_leader_log_end_offset = self.log_end_offset
        replica.broker_epoch = replica_epoch
        replica.fetch_leader_epoch = fetch_leader_epoch
        proposal = self._maybe_expand(replica_id, replica, metadata_broker_epochs)
        moved = self.maybe_advance_high_watermark()
        return FetchDecision(ErrorCode.NONE, moved, proposal)

    def _maybe_expand(
        self, replica_id: int, replica: ReplicaState, metadata_broker_epochs: Mapping[int, int]
    ) -> AlterPartitionProposal | None:
        if not isinstance(self.isr_state, Committed) or self.waiting_for_metadata:
            return None
        if replica_id in self.isr_state.isr:
            return None
        if replica.log_end_offset < self.high_watermark or replica.log_end_offset < self.leader_epoch_start_offset:
            return None
        if replica.fetch_leader_epoch != self.leader_epoch:
            return None
        if metadata_broker_epochs.get(replica_id) != replica.broker_epoch:
            return None  # KIP-903: the metadata must agree with the epoch the follower fetched with
        members = self.isr_state.isr | {replica_id}
        proposal = self._proposal(members, metadata_broker_epochs)
        self.isr_state = PendingExpandIsr(self.isr_state.isr, replica_id, proposal)
        self._log.info(
            "isr_expand_proposed",
            isr=sorted(self.isr_state.isr),
            adding=replica_id,
            proposed=[(s.broker_id, s.broker_epoch) for s in proposal.new_isr_with_epochs],
            fetch_offset=replica.log_end_offset,
            high_watermark=self.high_watermark,
        )
        return proposal

    def maybe_shrink_isr(self, now_ms: int, metadata_broker_epochs: Mapping[int, int]) -> AlterPartitionProposal | None:
        if not isinstance(self.isr_state, Committed) or self.waiting_for_metadata:
            return None
        lagging = frozenset(
            r
            for r in self.isr_state.isr
            if r != self.broker_id
            and now_ms - self.followers.get(r, ReplicaState()).last_caught_up_ms > self.replica_lag_time_max_ms
        )
        if not lagging:
            return None
        members = self.isr_state.isr - lagging
        proposal = self._proposal(members, metadata_broker_epochs)
        self.isr_state = PendingShrinkIsr(self.isr_state.isr, lagging, proposal)
        self._log.info(
            "isr_shrink_proposed",
            isr=sorted(self.isr_state.isr),
            removing=sorted(lagging),
            lag_ms={r: now_ms - self.followers[r].last_caught_up_ms for r in lagging if r in self.followers},
            proposed=[(s.broker_id, s.broker_epoch) for s in proposal.new_isr_with_epochs],
        )
        return proposal

    def _proposal(self, members: frozenset[int], metadata_broker_epochs: Mapping[int, int]) -> AlterPartitionProposal:
        def epoch_of(member: int) -> int:
            if member == self.broker_id:
                return self.broker_epoch
            fetched = self.followers.get(member, ReplicaState()).broker_epoch
            return fetched if fetched >= 0 else metadata_broker_epochs.get(member, -1)

        states = tuple(BrokerState(m, epoch_of(m)) for m in sorted(members))
        return AlterPartitionProposal(self.leader_epoch, self.partition_epoch, states)

    # ---- AlterPartition answers ----

    def on_alter_partition_response(
        self,
        proposal: AlterPartitionProposal,
        error: ErrorCode,
        isr: tuple[int, ...],
        leader_epoch: int,
        partition_epoch: int,
    ) -> bool:
        """Apply the controller's answer to `proposal`; True when it should be retried later."""
        pending = self.isr_state
        if isinstance(pending, Committed) or pending.proposal != proposal:
            return False  # metadata already moved on
        if error == ErrorCode.NONE:
            if partition_epoch < self.partition_epoch:
                return False
            self.isr_state = Committed(frozenset(isr))
            self.partition_epoch = partition_epoch
            self._log.info("isr_committed", isr=sorted(isr), partition_epoch=partition_epoch, source="alter_partition")
            self.maybe_advance_high_watermark()
            return False
        self.isr_state = Committed(pending.isr)
        self._log.info(
            "isr_rolled_back", error=error.name, proposed=sorted(proposal.isr), committed=sorted(pending.isr)
        )
        if error in WAIT_FOR_METADATA:
            self.waiting_for_metadata = True
            return False
        return error != ErrorCode.INELIGIBLE_REPLICA

    # ---- produce ----

    def check_produce(self, acks: int) -> ErrorCode:
        if acks == -1 and len(self.isr_state.isr) < self.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS
        return ErrorCode.NONE

    def produce_outcome(self, required_offset: int) -> ErrorCode | None:
        """A pending acks=all produce's answer, None while it waits (Kafka's checkEnoughReplicasReachOffset)."""
        if self.high_watermark < required_offset:
            return None
        if len(self.isr_state.isr) < self.min_insync_replicas:
            return ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return ErrorCode.NONE
