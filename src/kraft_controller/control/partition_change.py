"""Kafka's PartitionChangeBuilder, pure: from a partition and a target ISR, the PartitionChange record (or None).

Elections are clean only: the leader is the first replica, in replica order, that is in the ISR and eligible
(registered, unfenced, not in controlled shutdown). The ISR is never emptied by the controller: the last member
stays (last replica standing) and the partition is leaderless until that broker returns.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass

from kraft_controller.metadata.image import MetadataImage, PartitionRegistration
from kraft_controller.metadata.records import NO_LEADER, BrokerStatus, LeaderRecoveryState, PartitionChange

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
class PartitionChangeOutcome:
    record: PartitionChange | None
    previous_leader: int
    leader: int

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
) -> PartitionChangeOutcome:
    isr = partition.isr if target_isr is None else target_isr
    if partition.leader != NO_LEADER and partition.leader in isr and eligible(partition.leader):
        leader = partition.leader
    else:
        leader = next((r for r in partition.replicas if r in isr and eligible(r)), NO_LEADER)
    recovery = (
        None
        if target_leader_recovery_state is None or target_leader_recovery_state == partition.leader_recovery_state
        else target_leader_recovery_state
    )
    if leader == partition.leader and isr == partition.isr and recovery is None:
        return PartitionChangeOutcome(None, partition.leader, leader)
    record = PartitionChange(
        topic_id=topic_id,
        partition_id=partition_id,
        leader=None if leader == partition.leader else leader,
        isr=None if isr == partition.isr else isr,
        leader_recovery_state=recovery,
        reason=reason,
    )
    return PartitionChangeOutcome(record, partition.leader, leader)
