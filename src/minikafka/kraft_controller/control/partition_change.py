"""Kafka's PartitionChangeBuilder, pure: from a partition and a target ISR, the PartitionChange record (or None).

A reassignment (KIP-455) completes here, on whatever change first finds every target replica in the ISR: the
replicas become the target, the removed ones leave the ISR, and the leader is re-elected if it was removed.

A clean election takes the first replica, in replica order, that is in the ISR and eligible (registered, unfenced,
not in controlled shutdown). Only when none is and the election may be unclean does the first eligible replica
outside the ISR lead: the ISR becomes just it, and the partition is RECOVERING until its leader reports RECOVERED.
The ISR is never emptied by the controller: the last member stays (last replica standing) and, without an unclean
election, the partition is leaderless until that broker returns.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass

from minikafka.kraft_controller.metadata.image import MetadataImage, PartitionRegistration
from minikafka.kraft_controller.metadata.records import NO_LEADER, BrokerStatus, LeaderRecoveryState, PartitionChange

Eligible = Callable[[int], bool]


def leader_eligibility(
    image: MetadataImage, excluded: Collection[int] = (), included: Collection[int] = ()
) -> Eligible:
    """Who may lead, judged on `image` as if `excluded` were fenced and `included` unfenced (changes being made
    in the same batch of records)."""

    def eligible(broker_id: int) -> bool:
        if broker_id in excluded:
            return False
        if broker_id in included:
            return True
        registration = image.broker(broker_id)
        return registration is not None and registration.status is BrokerStatus.UNFENCED

    return eligible


def isr_without(partition: PartitionRegistration, broker_id: int) -> tuple[int, ...]:
    """The ISR without `broker_id`, except that the last member stays (KIP-903's noted exception)."""
    remaining = tuple(b for b in partition.isr if b != broker_id)
    return remaining if remaining else partition.isr


@dataclass(frozen=True)
class ReplicaSets:
    """A partition's replicas with the KIP-455 removing and adding subsets."""

    replicas: tuple[int, ...]
    removing: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()

    @property
    def reassigning(self) -> bool:
        return bool(self.removing or self.adding)

    @classmethod
    def of(cls, partition: PartitionRegistration) -> ReplicaSets:
        return cls(partition.replicas, partition.removing_replicas, partition.adding_replicas)


def _try_complete_reassignment(sets: ReplicaSets, isr: tuple[int, ...]) -> tuple[ReplicaSets, tuple[int, ...]]:
    """Kafka's tryCompleteReassignment: done once every target replica is in the ISR."""
    target = tuple(r for r in sets.replicas if r not in sets.removing)
    if not sets.reassigning or not set(target) <= set(isr):
        return sets, isr
    return ReplicaSets(target), tuple(b for b in isr if b not in sets.removing)


@dataclass(frozen=True)
class PartitionChangeOutcome:
    record: PartitionChange | None
    previous_leader: int
    leader: int
    reassignment_completed: bool = False
    unclean: bool = False  # the leader came from outside the ISR

    @property
    def elected(self) -> bool:
        """A new leader was chosen (not merely the old one lost)."""
        return self.leader != self.previous_leader and self.leader != NO_LEADER


def build_partition_change(
    topic_id: uuid.UUID,
    partition_id: int,
    partition: PartitionRegistration,
    eligible: Eligible,
    reason: str,
    target_isr: tuple[int, ...] | None = None,
    target_leader_recovery_state: LeaderRecoveryState | None = None,
    target_replicas: ReplicaSets | None = None,
    unclean: bool = False,
) -> PartitionChangeOutcome:
    current = ReplicaSets.of(partition)
    wanted = current if target_replicas is None else target_replicas
    sets, isr = _try_complete_reassignment(wanted, partition.isr if target_isr is None else target_isr)
    if partition.leader != NO_LEADER and partition.leader in isr and eligible(partition.leader):
        leader = partition.leader
    else:
        leader = next((r for r in sets.replicas if r in isr and eligible(r)), NO_LEADER)
    elected_unclean = False
    if leader == NO_LEADER and unclean:
        leader = next((r for r in sets.replicas if eligible(r)), NO_LEADER)
        if leader != NO_LEADER:
            elected_unclean = True
            isr = (leader,)
            target_leader_recovery_state = LeaderRecoveryState.RECOVERING
    recovery = (
        None
        if target_leader_recovery_state is None or target_leader_recovery_state == partition.leader_recovery_state
        else target_leader_recovery_state
    )
    if leader == partition.leader and isr == partition.isr and recovery is None and sets == current:
        return PartitionChangeOutcome(None, partition.leader, leader)
    record = PartitionChange(
        topic_id=topic_id,
        partition_id=partition_id,
        leader=None if leader == partition.leader else leader,
        isr=None if isr == partition.isr else isr,
        leader_recovery_state=recovery,
        reason=reason,
        replicas=None if sets.replicas == current.replicas else sets.replicas,
        removing_replicas=None if sets.removing == current.removing else sets.removing,
        adding_replicas=None if sets.adding == current.adding else sets.adding,
    )
    completed = wanted.reassigning and not sets.reassigning
    return PartitionChangeOutcome(record, partition.leader, leader, completed, elected_unclean)
