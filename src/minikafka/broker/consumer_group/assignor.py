"""The server-side assignors (`group.consumer.assignors`). `uniform`: every partition of the subscribed topics goes
to one member subscribed to its topic, members get as even a share as their subscriptions allow, and a partition
stays with the member that had it in the previous target assignment unless the balance needs it elsewhere.
`range`: each topic on its own, its subscribers (by member id) get contiguous ranges of its partitions, the first
ones one more when they do not divide evenly, so members subscribed to co-partitioned topics get the same
partition numbers of each; a member keeps what it had up to its share. Deterministic: ties go to the smallest
member id, partitions are taken in order.

Rack-aware, as Kafka's assignors are, when members have racks (`rack_id`, `client.rack`) and the metadata knows
the racks of partitions' replicas: a partition goes preferably to a member in a rack holding one of its replicas
(reading from a replica in its own rack), so long as the balance stays as it would be without racks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.broker.consumer_group.model import Partitions, TopicPartition

UNIFORM, RANGE = "uniform", "range"


@dataclass(frozen=True)
class Racks:
    """Each member's rack and the racks of each partition's replicas (either missing: no preference)."""

    members: Mapping[str, str] = field(default_factory=dict)
    partitions: Mapping[TopicPartition, frozenset[str]] = field(default_factory=dict)

    def mismatched(self, member_id: str, tp: TopicPartition) -> bool:
        """The member has a rack, the partition's replicas have racks, and none is the member's."""
        rack, replicas = self.members.get(member_id), self.partitions.get(tp)
        return bool(rack) and bool(replicas) and rack not in (replicas or ())

    def matches(self, member_id: str, tp: TopicPartition) -> bool:
        return self.members.get(member_id) in self.partitions.get(tp, frozenset())


NO_RACKS = Racks()


class Move(NamedTuple):
    partition: TopicPartition
    donor: str
    receiver: str


def uniform_assign(
    subscriptions: Mapping[str, frozenset[str]],
    topics: Mapping[str, int],
    previous: Mapping[str, Partitions],
    racks: Racks = NO_RACKS,
) -> dict[str, Partitions]:
    """The target assignment of `subscriptions` (member id -> topics) over `topics` (topic -> partition count),
    sticky to `previous` (the last target assignment)."""
    eligible: dict[TopicPartition, list[str]] = {}
    for member_id in sorted(subscriptions):
        for topic in sorted(subscriptions[member_id]):
            for partition in range(topics.get(topic, 0)):
                eligible.setdefault(TopicPartition(topic, partition), []).append(member_id)
    assignment: dict[str, set[TopicPartition]] = {m: set() for m in subscriptions}
    for member_id in sorted(subscriptions):
        for tp in sorted(previous.get(member_id, ())):
            if member_id in eligible.get(tp, ()) and not any(tp in a for a in assignment.values()):
                assignment[member_id].add(tp)
    taken = set().union(*assignment.values())
    share = -(-len(eligible) // max(len(subscriptions), 1))  # the most any member gets when all are alike
    for tp in sorted(eligible):
        if tp not in taken:
            assignment[_receiver(tp, eligible[tp], assignment, share, racks)].add(tp)
    while (move := _next_move(assignment, eligible, racks)) is not None:
        assignment[move.donor].remove(move.partition)
        assignment[move.receiver].add(move.partition)
    return {m: frozenset(a) for m, a in assignment.items()}


def _receiver(
    tp: TopicPartition, members: list[str], assignment: dict[str, set[TopicPartition]], share: int, racks: Racks
) -> str:
    """The least loaded member, or a less loaded one in the partition's racks while it is below its share."""
    least = min(members, key=lambda m: (len(assignment[m]), m))
    matching = [m for m in members if not racks.mismatched(m, tp) and len(assignment[m]) < share]
    if racks.mismatched(least, tp) and matching:
        return min(matching, key=lambda m: (len(assignment[m]), m))
    return least


def _next_move(
    assignment: dict[str, set[TopicPartition]], eligible: dict[TopicPartition, list[str]], racks: Racks
) -> Move | None:
    """A partition the fullest possible donor can hand to a member with at least two fewer: each move makes the
    shares more even, so the moves end. Partitions outside the donor's rack go first, to members in their racks
    first."""
    for donor in sorted(assignment, key=lambda m: (-len(assignment[m]), m)):
        for tp in sorted(assignment[donor], key=lambda t: (racks.mismatched(donor, t), t), reverse=True):
            receivers = [m for m in eligible[tp] if len(assignment[m]) + 2 <= len(assignment[donor])]
            if receivers:
                return Move(tp, donor, min(receivers, key=lambda m: (racks.mismatched(m, tp), len(assignment[m]), m)))
    return None


def range_assign(
    subscriptions: Mapping[str, frozenset[str]],
    topics: Mapping[str, int],
    previous: Mapping[str, Partitions],
    racks: Racks = NO_RACKS,
) -> dict[str, Partitions]:
    """As `uniform_assign`, with Kafka's server-side `range` assignor."""
    assignment: dict[str, set[TopicPartition]] = {m: set() for m in subscriptions}
    subscribed = sorted(set().union(*subscriptions.values())) if subscriptions else []
    for topic in subscribed:
        count = topics.get(topic, 0)
        members = sorted(m for m, s in subscriptions.items() if topic in s)
        if count == 0 or not members:
            continue
        for member_id, partitions in _topic_ranges(topic, count, members, previous, racks).items():
            assignment[member_id].update(TopicPartition(topic, p) for p in partitions)
    return {m: frozenset(a) for m, a in assignment.items()}


def _topic_ranges(
    topic: str, count: int, members: list[str], previous: Mapping[str, Partitions], racks: Racks = NO_RACKS
) -> dict[str, list[int]]:
    """Each member's share of the topic's partitions: a quota, one more for the first members while the remainder
    lasts (those already holding more than the quota first); what a member held is kept up to its share, then
    free partitions in its racks, then the next free ones."""
    quota, extra = divmod(count, len(members))
    held = {m: _held(previous.get(m, frozenset()), topic, count) for m in members}
    shares = dict.fromkeys(members, quota)
    for holding_more in (True, False):
        for member_id in members:
            if extra and shares[member_id] == quota and (len(held[member_id]) > quota or not holding_more):
                shares[member_id] += 1
                extra -= 1
    # What a member keeps of what it held: those in its rack first.
    kept = {m: _rack_first(held[m], m, topic, racks)[: shares[m]] for m in members}
    taken = {p for partitions in kept.values() for p in partitions}
    if racks.members and racks.partitions:
        for member_id in members:
            for p in range(count):
                rack_match = racks.matches(member_id, TopicPartition(topic, p))
                if len(kept[member_id]) < shares[member_id] and p not in taken and rack_match:
                    kept[member_id].append(p)
                    taken.add(p)
    free = iter(p for p in range(count) if p not in taken)
    return {m: sorted(kept[m] + [next(free) for _ in range(shares[m] - len(kept[m]))]) for m in members}


def _rack_first(partitions: list[int], member_id: str, topic: str, racks: Racks) -> list[int]:
    return sorted(partitions, key=lambda p: (not racks.matches(member_id, TopicPartition(topic, p)), p))


def _held(partitions: Partitions, topic: str, count: int) -> list[int]:
    return sorted(tp.partition for tp in partitions if tp.topic == topic and tp.partition < count)


Assignor = Callable[
    [Mapping[str, frozenset[str]], Mapping[str, int], Mapping[str, Partitions], Racks], dict[str, Partitions]
]
ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform_assign, RANGE: range_assign}
