"""The server-side assignors (`group.consumer.assignors`). `uniform`: every partition of the subscribed topics goes
to one member subscribed to its topic, members get as even a share as their subscriptions allow, and a partition
stays with the member that had it in the previous target assignment unless the balance needs it elsewhere.
`range`: each topic on its own, its subscribers (by member id) get contiguous ranges of its partitions, the first
ones one more when they do not divide evenly, so members subscribed to co-partitioned topics get the same
partition numbers of each; a member keeps what it had up to its share. Deterministic: ties go to the smallest
member id, partitions are taken in order."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from minikafka.broker.consumer_group.model import Partitions, TopicPartition

UNIFORM, RANGE = "uniform", "range"


class Move(NamedTuple):
    partition: TopicPartition
    donor: str
    receiver: str


def uniform_assign(
    subscriptions: Mapping[str, frozenset[str]],
    topics: Mapping[str, int],
    previous: Mapping[str, Partitions],
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
    for tp in sorted(eligible):
        if tp not in taken:
            assignment[min(eligible[tp], key=lambda m: (len(assignment[m]), m))].add(tp)
    while (move := _next_move(assignment, eligible)) is not None:
        assignment[move.donor].remove(move.partition)
        assignment[move.receiver].add(move.partition)
    return {m: frozenset(a) for m, a in assignment.items()}


def _next_move(assignment: dict[str, set[TopicPartition]], eligible: dict[TopicPartition, list[str]]) -> Move | None:
    """A partition the fullest possible donor can hand to a member with at least two fewer: each move makes the
    shares more even, so the moves end."""
    for donor in sorted(assignment, key=lambda m: (-len(assignment[m]), m)):
        for tp in sorted(assignment[donor], reverse=True):
            receivers = [m for m in eligible[tp] if len(assignment[m]) + 2 <= len(assignment[donor])]
            if receivers:
                return Move(tp, donor, min(receivers, key=lambda m: (len(assignment[m]), m)))
    return None


def range_assign(
    subscriptions: Mapping[str, frozenset[str]],
    topics: Mapping[str, int],
    previous: Mapping[str, Partitions],
) -> dict[str, Partitions]:
    """As `uniform_assign`, with Kafka's server-side `range` assignor."""
    assignment: dict[str, set[TopicPartition]] = {m: set() for m in subscriptions}
    subscribed = sorted(set().union(*subscriptions.values())) if subscriptions else []
    for topic in subscribed:
        count = topics.get(topic, 0)
        members = sorted(m for m, s in subscriptions.items() if topic in s)
        if count == 0 or not members:
            continue
        for member_id, partitions in _topic_ranges(topic, count, members, previous).items():
            assignment[member_id].update(TopicPartition(topic, p) for p in partitions)
    return {m: frozenset(a) for m, a in assignment.items()}


def _topic_ranges(
    topic: str, count: int, members: list[str], previous: Mapping[str, Partitions]
) -> dict[str, list[int]]:
    """Each member's share of the topic's partitions: a quota, one more for the first members while the remainder
    lasts (those already holding more than the quota first); what a member held is kept up to its share."""
    quota, extra = divmod(count, len(members))
    held = {m: _held(previous.get(m, frozenset()), topic, count) for m in members}
    shares = dict.fromkeys(members, quota)
    for holding_more in (True, False):
        for member_id in members:
            if extra and shares[member_id] == quota and (len(held[member_id]) > quota or not holding_more):
                shares[member_id] += 1
                extra -= 1
    kept = {m: held[m][: shares[m]] for m in members}
    taken = {p for partitions in kept.values() for p in partitions}
    free = iter(p for p in range(count) if p not in taken)
    return {m: kept[m] + [next(free) for _ in range(shares[m] - len(kept[m]))] for m in members}


def _held(partitions: Partitions, topic: str, count: int) -> list[int]:
    return sorted(tp.partition for tp in partitions if tp.topic == topic and tp.partition < count)


Assignor = Callable[[Mapping[str, frozenset[str]], Mapping[str, int], Mapping[str, Partitions]], dict[str, Partitions]]
ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform_assign, RANGE: range_assign}
