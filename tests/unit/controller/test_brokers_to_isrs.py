"""The controller's index of partitions by broker (Kafka's BrokersToIsrs and BrokersToElrs, and the partitions
without a leader) always agrees with a scan of every partition, whatever records were replayed: topics created,
changed, deleted, and created again under the same name; the state machine's follows its generation image through
proposals, commits and a leadership change."""

from __future__ import annotations

import random
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from minikafka.kraft_controller.control.brokers_to_isrs import BrokersToIsrs, index_keys
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_state_machine import ControllerStateMachine
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    NO_LEADER,
    Partition,
    PartitionChange,
    Record,
    RemoveTopic,
    Topic,
)

BROKERS = (1, 2, 3, 4, 5)
NAMES = ("a", "b", "c")
brokers = st.lists(st.sampled_from(BROKERS), unique=True, max_size=3).map(tuple)


def scanned(image: MetadataImage) -> dict[int, set[tuple[str, int]]]:
    expected: dict[int, set[tuple[str, int]]] = {}
    for topic, index, partition in image.partitions():
        for broker_id in index_keys(partition):
            expected.setdefault(broker_id, set()).add((topic.name, index))
    return expected


@st.composite
def records(draw: st.DrawFn) -> list[Record]:
    """Replayable steps over a few topic names."""
    steps: list[Record] = []
    ids: dict[str, uuid.UUID] = {}
    for _ in range(draw(st.integers(1, 12))):
        name = draw(st.sampled_from(NAMES))
        action = draw(st.sampled_from(("create", "change", "change", "remove")))
        if action == "create" or name not in ids:
            ids[name] = uuid.UUID(int=len(steps) + 1)  # a new id: Kafka never reuses one
            steps.append(Topic(name=name, topic_id=ids[name]))
            for index in range(draw(st.integers(0, 4))):
                replicas = draw(brokers)
                isr = tuple(b for b in replicas if draw(st.booleans()))
                leader = draw(st.sampled_from((*isr, NO_LEADER)))
                steps.append(Partition(ids[name], index, replicas, isr, leader, elr=draw(brokers)))
        elif action == "change":
            leader = draw(st.sampled_from((None, NO_LEADER, *BROKERS)))
            isr, elr = draw(st.none() | brokers), draw(st.none() | brokers)
            steps.append(PartitionChange(ids[name], draw(st.integers(0, 4)), leader=leader, isr=isr, elr=elr))
        else:
            steps.append(RemoveTopic(ids.pop(name)))
    return steps


@settings(max_examples=150, deadline=None)
@given(records())
def test_the_index_agrees_with_a_scan_of_every_partition(steps: list[Record]) -> None:
    image = MetadataImage()
    index = BrokersToIsrs()
    for offset, record in enumerate(steps):
        before, image = image, image.replay(record, offset)
        index.replayed(record, before, image)
        assert index.brokers() == scanned(image)
    assert BrokersToIsrs.of(image).brokers() == index.brokers()
    for broker_id in (*BROKERS, NO_LEADER):
        in_order = [(t.name, i) for t, i, p in image.partitions() if broker_id in index_keys(p)]
        assert index.partitions_of(broker_id) == in_order


@settings(max_examples=60, deadline=None)
@given(records(), st.integers(0, 2**32))
def test_the_state_machines_index_follows_its_generation_image(steps: list[Record], seed: int) -> None:
    """Records proposed (some committed as proposed, some replayed from elsewhere) and a leadership change at random
    points: whenever it is read, the index describes the image requests are generated against."""
    rng = random.Random(seed)
    machine = ControllerStateMachine(ControlConfig(), rng)
    offset = 0
    for record in steps:
        if rng.random() < 0.7:
            assert machine.isr_index is not None  # built (or kept) while proposing
            machine.apply_proposed([record], offset)
            if rng.random() < 0.5:
                machine.replay(record, offset)  # its commit
        elif rng.random() < 0.5:
            machine.revert_to_committed()  # a leadership change: the proposals dropped
            machine.replay(record, offset)  # a record another leader wrote
        else:
            machine.revert_to_committed()
            continue
        offset += 1
        assert machine.isr_index.brokers() == scanned(machine.image)
