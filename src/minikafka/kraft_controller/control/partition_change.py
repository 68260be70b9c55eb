"""Kafka's PartitionChangeBuilder, pure: from a partition and a target ISR, the PartitionChange record (or None).

A reassignment (KIP-455) completes here, on whatever change first finds every target replica in the ISR: the
replicas become the target, the removed ones leave the ISR, and the leader is re-elected if it was removed.

A clean election takes the first replica, in replica order, that is in the ISR and eligible (registered, unfenced,
not in controlled shutdown). Only when none is and the election may be unclean does the first eligible replica
outside the ISR lead: the ISR becomes just it, and the partition is RECOVERING until its leader reports RECOVERED.
Without KIP-966 (eligible.leader.replicas.version 0) the ISR is never emptied by the controller: the last member
stays (last replica standing) and, without an unclean election, the partition is leaderless until that broker
returns, whatever it lost meanwhile. With it, a replica that leaves the ISR while the ISR is below min ISR joins the
Eligible Leader Replicas (ELR): the HWM could not move without it, so it holds every committed record. The ISR may
then empty; the election order is the ISR, then an unfenced ELR member, then the last known leader (kept in
LastKnownElr). A broker that restarted uncleanly may have lost its tail, so it leaves every ELR.
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
    """The ISR without `broker_id`; the builder keeps the last member when the ELR is off."""
    return tuple(b for b in partition.isr if b != broker_id)


@dataclass(frozen=True)
class ElrContext:
    """KIP-966 inputs of one change: the topic's effective min ISR and the brokers that restarted uncleanly."""

    min_isr: int
    unclean_shutdown_replicas: frozenset[int] = frozenset()


@dataclass(frozen=True)
class TopicDefaults:
    """The controller's values for topics without their own."""

    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable
    min_insync_replicas: int = 1  # min.insync.replicas


KAFKA_TOPIC_DEFAULTS = TopicDefaults()


def elr_context(
    image: MetadataImage,
    topic_name: str,
    partition: PartitionRegistration,
    defaults: TopicDefaults,
    unclean_shutdown_replicas: Collection[int] = (),
) -> ElrContext | None:
    """None while eligible.leader.replicas.version is 0; else the topic's min ISR capped at its replication factor
    (Kafka's getTopicEffectiveMinIsr)."""
    if not image.elr_enabled:
        return None
    min_isr = min(image.min_insync_replicas(topic_name, defaults.min_insync_replicas), len(partition.replicas))
    return ElrContext(min_isr, frozenset(unclean_shutdown_replicas))


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
    unclean: bool = False  # the leader came from outside the ISR and ELR
    from_elr: bool = False  # the leader came from the ELR

    @property
    def elected(self) -> bool:
        """A new leader was chosen (not merely the old one lost)."""
        return self.leader != self.previous_leader and self.leader != NO_LEADER


@dataclass(frozen=True)
class _Election:
    leader: int
    unclean: bool = False
    from_elr: bool = False


def _target_elr(partition: PartitionRegistration, isr: tuple[int, ...], elr: ElrContext | None) -> tuple[int, ...]:
    """Kafka's maybePopulateTargetElr: an ISR at min ISR needs no ELR; below it, whoever leaves the ISR joins the
    ELR, and an uncleanly restarted broker leaves it."""
    if elr is None or len(isr) >= elr.min_isr:
        return ()
    candidates = set(partition.elr) | set(partition.isr)
    return tuple(sorted(b for b in candidates if b not in isr and b not in elr.unclean_shutdown_replicas))


def _elect(
    partition: PartitionRegistration,
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    target_elr: tuple[int, ...],
    eligible: Eligible,
    elr: ElrContext | None,
    unclean: bool,
) -> _Election:
    """Kafka's electAnyLeader: keep a valid leader, else the ISR, else (the ISR empty) an unfenced ELR member, else
    the last known leader if unfenced, else (unclean) any live replica."""

    def valid(broker_id: int) -> bool:
        return (broker_id in isr or (not isr and broker_id in target_elr)) and eligible(broker_id)

    if partition.leader != NO_LEADER and valid(partition.leader):
        return _Election(partition.leader)
    chosen = next((r for r in replicas if valid(r)), NO_LEADER)
    if chosen != NO_LEADER:
        return _Election(chosen, from_elr=chosen not in isr)
    known = partition.last_known_elr
    if elr is not None and not isr and not target_elr and len(known) == 1 and eligible(known[0]):
        return _Election(known[0], unclean=True)
    if unclean:
        chosen = next((r for r in replicas if eligible(r)), NO_LEADER)
        return _Election(chosen, unclean=chosen != NO_LEADER)
    return _Election(NO_LEADER)


def _last_known_elr(
    partition: PartitionRegistration, isr: tuple[int, ...], leader: int, elr: ElrContext | None
) -> tuple[int, ...]:
    """Kafka's maybeUpdateLastKnownLeader: the leader is remembered the first time the ISR empties, and forgotten
    once the partition has a leader again."""
    if elr is None:
        return ()
    if not isr and partition.isr and partition.leader != NO_LEADER:
        return (partition.leader,)
    return () if leader != NO_LEADER else partition.last_known_elr


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
    elr: ElrContext | None = None,
) -> PartitionChangeOutcome:
    """`elr`: None when eligible.leader.replicas.version is 0 (Kafka 3.x: the last ISR member stays)."""
    current = ReplicaSets.of(partition)
    wanted = current if target_replicas is None else target_replicas
    sets, isr = _try_complete_reassignment(wanted, partition.isr if target_isr is None else target_isr)
    target_elr = _target_elr(partition, isr, elr)
    election = _elect(partition, sets.replicas, isr, target_elr, eligible, elr, unclean)
    leader = election.leader
    if election.from_elr:
        isr, target_elr = (leader,), tuple(b for b in target_elr if b != leader)
    elif election.unclean:
        isr, target_elr = (leader,), ()
        target_leader_recovery_state = LeaderRecoveryState.RECOVERING
    if not isr and elr is None:
        isr = partition.isr  # the last replica standing stays
    last_known = _last_known_elr(partition, isr, leader, elr)
    recovery = (
        None
        if target_leader_recovery_state is None or target_leader_recovery_state == partition.leader_recovery_state
        else target_leader_recovery_state
    )
    unchanged = (leader, isr, target_elr, last_known) == (
        partition.leader,
        partition.isr,
        partition.elr,
        partition.last_known_elr,
    )
    if unchanged and recovery is None and sets == current:
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
        elr=None if target_elr == partition.elr else target_elr,
        last_known_elr=None if last_known == partition.last_known_elr else last_known,
    )
    completed = wanted.reassigning and not sets.reassigning
    return PartitionChangeOutcome(record, partition.leader, leader, completed, election.unclean, election.from_elr)
