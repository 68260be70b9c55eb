"""transaction.version 2's implicit AddPartitionsToTxn at the partition leader: a transactional Produce v12 whose
producer has no open transaction in the partition has the leader ask the coordinator to add the partition (not only
verify it), even with transaction.partition.verification.enable off, and ask again on CONCURRENT_TRANSACTIONS every
add.partitions.to.txn.retry.backoff.ms for up to add.partitions.to.txn.retry.backoff.max.ms; a version-0 produce is
verified once, or, with the check off, appended as it is."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from minikafka.broker.coordinator_runtime.internal_topic import CoordinatorLookup
from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.transaction.core import Reply
from minikafka.broker.transaction.verification import AddPartitionsRetry, ProduceVerifier
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch

TP = TopicPartition("orders", 0)
BATCH = build_batch([Record(b"v")], producer_id=7, producer_epoch=1, base_sequence=0, attributes=TRANSACTIONAL_FLAG)


class Coordinator:
    """The transaction coordinator on this broker: records what it was asked."""

    def __init__(self, *answers: ErrorCode) -> None:
        self.answers, self.asked = list(answers or [ErrorCode.NONE]), []  # type: list[tuple[str, Any]]

    @property
    def answer(self) -> ErrorCode:
        """The next answer; the last one once they run out."""
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    def find_coordinator(self, transactional_id: str) -> CoordinatorLookup:
        return CoordinatorLookup(ErrorCode.NONE, 1)

    async def add_partitions(self, *args: Any) -> Reply:
        self.asked.append(("add", args))
        return Reply(0, self.answer)

    def verify(self, *args: Any) -> dict[TopicPartitionKey, ErrorCode]:
        self.asked.append(("verify", args))
        return {TopicPartitionKey(TP.topic, TP.partition): self.answer}


def manager(verification: bool, retry_max_ms: int = 100) -> Any:
    state = SimpleNamespace(ongoing={}, has_ongoing_transaction=lambda *_: False)
    log = SimpleNamespace(producer_state=state, start_verification=lambda producer_id, *_: 3)
    appended: list[int | None] = []

    def produce(tp: Any, records: bytes, acks: int, timeout_ms: int, verification_guard: int | None = None) -> Any:
        appended.append(verification_guard)
        future = asyncio.get_running_loop().create_future()
        future.set_result(ProduceResult(ErrorCode.NONE))
        return future

    return SimpleNamespace(
        config=SimpleNamespace(
            node_id=1,
            inter_node_tls=None,
            add_partitions_to_txn_retry_backoff_ms=1,
            add_partitions_to_txn_retry_backoff_max_ms=retry_max_ms,
            request_timeout_ms=30000,
        ),
        replicas={TP: SimpleNamespace(log=log)},
        transaction_verification=verification,
        produce=produce,
        appended=appended,
    )


def produce(
    verification: bool, add_partitions: bool, *answers: ErrorCode, retry_max_ms: int = 100
) -> tuple[Any, Any, Any]:
    coordinator, broker = Coordinator(*answers), manager(verification, retry_max_ms)
    verifier = ProduceVerifier(broker, coordinator)  # type: ignore[arg-type]

    async def run() -> ProduceResult:
        return await verifier.produce(TP, BATCH, -1, 1000, "payments", add_partitions)

    return asyncio.run(run()), coordinator, broker


def test_a_produce_of_version_2_adds_its_partition_even_with_verification_off() -> None:
    result, coordinator, broker = produce(verification=False, add_partitions=True)
    assert result.error == ErrorCode.NONE
    assert coordinator.asked == [("add", ("payments", 7, 1, [TopicPartitionKey("orders", 0)], 2))]
    assert broker.appended == [3]


def test_a_refused_add_appends_nothing_and_a_fenced_producer_is_answered_invalid_producer_epoch() -> None:
    """Kafka's AddPartitionsToTxnManager answers a produce INVALID_PRODUCER_EPOCH for PRODUCER_FENCED: producers
    take it for being fenced (librdkafka's 0103 "produce after fence" expects that fatal error)."""
    for version_2 in (True, False):
        result, _, broker = produce(True, version_2, ErrorCode.PRODUCER_FENCED)
        assert result.error == ErrorCode.INVALID_PRODUCER_EPOCH and broker.appended == []
    result, _, broker = produce(True, True, ErrorCode.INVALID_TXN_STATE)
    assert result.error == ErrorCode.INVALID_TXN_STATE and broker.appended == []


def test_a_produce_of_version_0_is_only_verified_and_not_at_all_with_the_check_off() -> None:
    _, coordinator, _ = produce(verification=True, add_partitions=False)
    assert [kind for kind, _ in coordinator.asked] == ["verify"]
    _, coordinator, broker = produce(verification=False, add_partitions=False)
    assert coordinator.asked == [] and broker.appended == [None]


def test_the_retry_waits_the_backoff_until_its_time_is_up_and_only_on_concurrent_transactions() -> None:
    retry = AddPartitionsRetry(backoff_ms=20, timeout_ms=100)
    assert retry.next_attempt_in_ms(ErrorCode.CONCURRENT_TRANSACTIONS, 1000, 1000) == 20
    assert retry.next_attempt_in_ms(ErrorCode.CONCURRENT_TRANSACTIONS, 1000, 1099) == 20
    assert retry.next_attempt_in_ms(ErrorCode.CONCURRENT_TRANSACTIONS, 1000, 1100) is None
    assert retry.next_attempt_in_ms(ErrorCode.PRODUCER_FENCED, 1000, 1000) is None
    assert retry.next_attempt_in_ms(ErrorCode.NONE, 1000, 1000) is None


def test_an_add_refused_concurrent_transactions_is_asked_again_and_appended() -> None:
    busy = ErrorCode.CONCURRENT_TRANSACTIONS
    result, coordinator, broker = produce(False, True, busy, busy, ErrorCode.NONE, retry_max_ms=60_000)
    assert result.error == ErrorCode.NONE
    assert [kind for kind, _ in coordinator.asked] == ["add", "add", "add"]
    assert broker.appended == [3]


def test_past_its_time_the_add_is_answered_not_enough_replicas_and_a_verification_is_never_asked_again() -> None:
    busy = ErrorCode.CONCURRENT_TRANSACTIONS
    result, coordinator, broker = produce(False, True, busy, retry_max_ms=0)
    assert result.error == ErrorCode.NOT_ENOUGH_REPLICAS and len(coordinator.asked) == 1 and broker.appended == []
    result, coordinator, broker = produce(True, False, busy, ErrorCode.NONE, retry_max_ms=60_000)
    assert result.error == ErrorCode.NOT_ENOUGH_REPLICAS and [k for k, _ in coordinator.asked] == ["verify"]
