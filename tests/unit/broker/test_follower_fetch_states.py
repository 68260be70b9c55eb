"""The follower's fetch states filed by leader (FollowerFetchStates): what each fetcher takes is every partition it
fetches now, and the partitions added, changed or removed since its previous take, with nothing for an unchanged
state put again."""

from __future__ import annotations

from minikafka.broker.fetch_session import PartitionFetchState
from minikafka.broker.follower_fetch_states import FollowerFetchStates

T = b"\x01" * 16


def state(partition: int, offset: int = 0, leader_epoch: int = 0) -> PartitionFetchState:
    return PartitionFetchState(T, "t", partition, leader_epoch, offset, -1, 0, 1 << 20)


def test_each_leader_takes_its_partitions_and_what_changed_since() -> None:
    states = FollowerFetchStates()
    states.put((T, 0), 0, state(0))
    states.put((T, 1), 0, state(1))
    states.put((T, 2), 2, state(2))
    first = states.take(0)
    assert (dict(first.states), first.changed) == ({(T, 0): state(0), (T, 1): state(1)}, {(T, 0), (T, 1)})
    states.put((T, 0), 0, state(0))  # the same state again: no change
    assert states.take(0).changed == frozenset()
    states.put((T, 1), 0, state(1, offset=5))
    assert states.take(0).changed == {(T, 1)} and states.take(0).states[(T, 1)].fetch_offset == 5
    assert states.take(2).changed == {(T, 2)} and states.take(2).changed == frozenset()


def test_a_partition_moving_leader_or_going_is_a_change_for_the_leader_it_leaves() -> None:
    states = FollowerFetchStates()
    states.put((T, 0), 0, state(0))
    states.put((T, 1), 0, state(1))
    states.take(0)
    states.put((T, 0), 2, state(0, leader_epoch=1))  # now followed from broker 2
    states.put((T, 1), 0, None)  # we lead it, or it failed
    moved = states.take(0)
    assert (dict(moved.states), moved.changed) == ({}, {(T, 0), (T, 1)})
    assert states.take(2).states == {(T, 0): state(0, leader_epoch=1)}
    states.keep_only(set())  # every replica gone
    gone = states.take(2)
    assert (dict(gone.states), gone.changed) == ({}, {(T, 0)})
    assert states.take(7) == ({}, frozenset())  # a leader never filed under
