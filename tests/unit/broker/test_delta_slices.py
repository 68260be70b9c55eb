"""The broker's pending metadata deltas: bounded slices, whole deltas in log order, each partition once a delta."""

from __future__ import annotations

import uuid

from minikafka.broker.delta_slices import ApplyPartition, FinishDelta, PendingDeltas, StartDelta
from minikafka.kraft_controller.metadata.image import MetadataImage

TOPIC = uuid.UUID("11111111-2222-4333-8444-555555555555")


def drain(pending: PendingDeltas, limit: int) -> list[list[object]]:
    slices = []
    while pending:
        slices.append(pending.next_slice(limit))
    return slices


def test_a_delta_is_handed_out_in_slices_of_at_most_the_limit() -> None:
    pending = PendingDeltas()
    image = MetadataImage()
    pending.add(image, 7, [(TOPIC, i) for i in range(10)])
    slices = drain(pending, 4)
    assert [len(s) for s in slices] == [4, 4, 4]  # start + 10 partitions + finish
    steps = [step for s in slices for step in s]
    assert steps[0] == StartDelta(image) and steps[-1] == FinishDelta(image, 7)
    assert [s.partition for s in steps if isinstance(s, ApplyPartition)] == list(range(10))


def test_deltas_are_applied_whole_and_in_order_each_against_its_own_image() -> None:
    pending = PendingDeltas()
    first, second = MetadataImage(), MetadataImage()
    pending.add(first, 1, [(TOPIC, 0), (TOPIC, 1)])
    pending.add(second, 2, [(TOPIC, 1)])
    steps = [step for s in drain(pending, 3) for step in s]
    assert [type(s).__name__ for s in steps] == [
        "StartDelta",
        "ApplyPartition",
        "ApplyPartition",
        "FinishDelta",
        "StartDelta",
        "ApplyPartition",
        "FinishDelta",
    ]
    assert [s.offset for s in steps if isinstance(s, FinishDelta)] == [1, 2]
    assert steps[5].image is second and steps[1].image is first


def test_a_partition_listed_twice_in_one_delta_is_applied_once() -> None:
    pending = PendingDeltas()
    pending.add(MetadataImage(), 3, [(TOPIC, 0), (TOPIC, 0), (TOPIC, 1)])
    assert pending.partitions_pending == 2


def test_a_slice_holds_at_least_one_step_and_nothing_once_empty() -> None:
    pending = PendingDeltas()
    image = MetadataImage()
    pending.add(image, 0, [])
    assert pending.next_slice(0) == [StartDelta(image)]
    assert pending.next_slice(0) == [FinishDelta(image, 0)]
    assert not pending and pending.next_slice(5) == []
