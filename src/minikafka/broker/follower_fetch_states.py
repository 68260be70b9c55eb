"""What a follower fetches from each leader, kept as its partitions change (Kafka's partitionStates of the
AbstractFetcherThread): one fetch state per followed partition, filed under its leader, and per leader the
partitions added, changed or removed since its fetcher last took them.

The replica manager puts a partition's state once something that goes into it may have moved (its role or
leader epoch, an answer applied, retention); an idle fetch round then costs what changed, not every partition
the broker holds. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.broker.fetch_session import PartitionFetchState, PartitionKey


class FetchStateChanges(NamedTuple):
    """One leader's partitions as its fetcher takes them."""

    # Every partition fetched from the leader now. A live view: it follows later puts, so read it before the
    # next await or copy what must outlive one.
    states: Mapping[PartitionKey, PartitionFetchState]
    changed: frozenset[PartitionKey]  # added, changed or removed since the previous take


@dataclass
class _LeaderStates:
    states: dict[PartitionKey, PartitionFetchState] = field(default_factory=dict)
    changed: set[PartitionKey] = field(default_factory=set)


@dataclass
class FollowerFetchStates:
    leaders: dict[int, _LeaderStates] = field(default_factory=dict)
    leader_of: dict[PartitionKey, int] = field(default_factory=dict)  # the leader each partition is filed under

    def put(self, key: PartitionKey, leader_id: int, state: PartitionFetchState | None) -> None:
        """`key` is fetched from `leader_id` with `state` now; None: it is fetched from no leader (we lead it,
        it failed, it is gone). A state equal to the one filed is no change."""
        filed_under = self.leader_of.get(key)
        if filed_under is not None and (state is None or filed_under != leader_id):
            previous = self.leaders[filed_under]
            del previous.states[key]
            previous.changed.add(key)
            del self.leader_of[key]
        if state is None:
            return
        entry = self.leaders.get(leader_id)
        if entry is None:
            entry = self.leaders[leader_id] = _LeaderStates()
        if entry.states.get(key) != state:
            entry.states[key] = state
            entry.changed.add(key)
            self.leader_of[key] = leader_id

    def keep_only(self, keys: set[PartitionKey]) -> None:
        """Partitions not in `keys` are fetched from no leader any more."""
        for key in [key for key in self.leader_of if key not in keys]:
            self.put(key, -1, None)

    def take(self, leader_id: int) -> FetchStateChanges:
        """`leader_id`'s partitions, and those changed since the previous take (which starts the next count)."""
        entry = self.leaders.get(leader_id)
        if entry is None:
            return FetchStateChanges({}, frozenset())
        changed = frozenset(entry.changed)
        entry.changed.clear()
        return FetchStateChanges(entry.states, changed)
