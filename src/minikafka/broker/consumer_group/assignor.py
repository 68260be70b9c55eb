"""The server-side `uniform` assignor: every partition of the subscribed topics goes to one member subscribed to
its topic, members get as even a share as their subscriptions allow, and a partition stays with the member that
had it in the previous target assignment unless the balance needs it elsewhere. Deterministic: ties go to the
smallest member id, partitions are taken in order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from minikafka.broker.consumer_group.model import Partitions, TopicPartition

UNIFORM = "uniform"


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
