"""Transactional offset commits at the group coordinator: held per producer until the marker, visible on COMMIT,
gone on ABORT; and the Kafka listener's AddPartitionsToTxn refusing unknown partitions without adding any."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

from kio.schema.add_partitions_to_txn.v3 import request as add_partitions_v3
from test_fetch_sessions_served import leader_of_two_partitions

from minikafka.broker.group.state import Group, OffsetAndMetadata, TopicPartitionKey
from minikafka.broker.group.txn_offsets import PendingTxnOffsets, as_offsets, complete, offsets_records
from minikafka.broker.kafka_wire import transactions as wire_transactions
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.image import PartitionRegistration

P0 = TopicPartitionKey("in", 0)


def pending_of(producer_id: int, offset: int) -> PendingTxnOffsets:
    return {producer_id: {"g": {P0: OffsetAndMetadata(offset, -1, "", 1)}}}


def test_a_commit_marker_makes_the_transactions_offsets_the_groups() -> None:
    pending = pending_of(7, 42)
    groups = {"g": Group("g").evolve(offsets={P0: OffsetAndMetadata(10, -1, "", 0)})}
    done = complete(pending, groups, 7, commit=True)
    assert done.groups["g"].offsets[P0].offset == 42
    assert pending == {}


def test_an_abort_marker_drops_them() -> None:
    pending = pending_of(7, 42)
    done = complete(pending, {}, 7, commit=False)
    assert done.groups == {} and pending == {}


def test_another_producers_marker_leaves_them_pending() -> None:
    pending = pending_of(7, 42)
    done = complete(pending, {}, 8, commit=True)
    assert done.groups == {} and 7 in pending


def test_records_read_back_are_the_offsets_written() -> None:
    offsets = [(P0, OffsetAndMetadata(42, 3, "m", 99))]
    assert as_offsets(offsets_records("g", offsets)) == {"g": dict(offsets)}


async def test_add_partitions_for_an_unknown_topic_adds_nothing(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    image = manager.metadata.image
    orders = image.topics_by_name["orders"]
    registration = PartitionRegistration((0, 1, 2), (0, 1, 2), 0, 1, 1)
    orders = dataclasses.replace(orders, partitions=orders.partitions.set(0, registration))
    manager.metadata = SimpleNamespace(
        image=dataclasses.replace(image, topics_by_name=image.topics_by_name.set("orders", orders))
    )  # type: ignore[assignment]
    added: list[object] = []

    async def add_partitions(*args: object) -> None:
        added.append(args)

    ctx = WireContext(manager, "PLAINTEXT", transactions=SimpleNamespace(add_partitions=add_partitions))  # type: ignore[arg-type]
    body = add_partitions_v3.AddPartitionsToTxnRequest(
        v3_and_below_transactional_id="t",
        v3_and_below_producer_id=1,
        v3_and_below_producer_epoch=0,
        v3_and_below_topics=(
            add_partitions_v3.AddPartitionsToTxnTopic(name="orders", partitions=(0,)),
            add_partitions_v3.AddPartitionsToTxnTopic(name="nowhere", partitions=(0,)),
        ),
    )
    response = await wire_transactions.handle_add_partitions(ctx, Request(ApiHeader(24, 3, 1), "t", body))
    errors = {
        (t.name, p.partition_index): int(p.partition_error_code.value)
        for t in response.results_by_topic_v3_and_below
        for p in t.results_by_partition
    }
    assert errors == {
        ("orders", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("nowhere", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert added == []
