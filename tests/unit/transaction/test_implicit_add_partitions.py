"""transaction.version 2's implicit AddPartitionsToTxn at the partition leader: a transactional Produce v12 whose
producer has no open transaction in the partition has the leader ask the coordinator to add the partition (not only
verify it), even with transaction.partition.verification.enable off; a version-0 produce is verified, or, with the
check off, appended as it is."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from minikafka.broker.coordinator_runtime.internal_topic import CoordinatorLookup
from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.transaction.core import Reply
from minikafka.broker.transaction.verification import ProduceVerifier
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch

TP = TopicPartition("orders", 0)
BATCH = build_batch([Record(b"v")], producer_id=7, producer_epoch=1, base_sequence=0, attributes=TRANSACTIONAL_FLAG)


class Coordinator:
    """The transaction coordinator on this broker: records what it was asked."""

    def __init__(self, answer: ErrorCode = ErrorCode.NONE) -> None:
        self.answer, self.asked = answer, []  # type: list[tuple[str, Any]]

    def find_coordinator(self, transactional_id: str) -> CoordinatorLookup:
        return CoordinatorLookup(ErrorCode.NONE, 1)

    async def add_partitions(self, *args: Any) -> Reply:
        self.asked.append(("add", args))
        return Reply(0, self.answer)

    def verify(self, *args: Any) -> dict[TopicPartitionKey, ErrorCode]:
        self.asked.append(("verify", args))
        return {TopicPartitionKey(TP.topic, TP.partition): self.answer}


def manager(verification: bool) -> Any:
    log = SimpleNamespace(producer_state=SimpleNamespace(ongoing={}), start_verification=lambda producer_id: 3)
    appended: list[int | None] = []

    def produce(tp: Any, records: bytes, acks: int, timeout_ms: int, verification_guard: int | None = None) -> Any:
        appended.append(verification_guard)
        future = asyncio.get_running_loop().create_future()
        future.set_result(ProduceResult(ErrorCode.NONE))
        return future

    return SimpleNamespace(
        config=SimpleNamespace(node_id=1, inter_node_tls=None),
        replicas={TP: SimpleNamespace(log=log)},
        transaction_verification=verification,
        produce=produce,
        appended=appended,
    )


def produce(verification: bool, add_partitions: bool, answer: ErrorCode = ErrorCode.NONE) -> tuple[Any, Any, Any]:
    coordinator, broker = Coordinator(answer), manager(verification)
    verifier = ProduceVerifier(broker, coordinator)  # type: ignore[arg-type]

    async def run() -> ProduceResult:
        return await verifier.produce(TP, BATCH, -1, 1000, "payments", add_partitions)

    return asyncio.run(run()), coordinator, broker


def test_a_produce_of_version_2_adds_its_partition_even_with_verification_off() -> None:
    result, coordinator, broker = produce(verification=False, add_partitions=True)
    assert result.error == ErrorCode.NONE
    assert coordinator.asked == [("add", ("payments", 7, 1, [TopicPartitionKey("orders", 0)], 2))]
    assert broker.appended == [3]


def test_a_refused_add_appends_nothing() -> None:
    result, _, broker = produce(verification=True, add_partitions=True, answer=ErrorCode.PRODUCER_FENCED)
    assert result.error == ErrorCode.PRODUCER_FENCED and broker.appended == []


def test_a_produce_of_version_0_is_only_verified_and_not_at_all_with_the_check_off() -> None:
    _, coordinator, _ = produce(verification=True, add_partitions=False)
    assert [kind for kind, _ in coordinator.asked] == ["verify"]
    _, coordinator, broker = produce(verification=False, add_partitions=False)
    assert coordinator.asked == [] and broker.appended == [None]
