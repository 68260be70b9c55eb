"""The transaction APIs check Kafka's ACLs before the coordinator sees anything: WRITE on the transactional id, READ
on the group of AddOffsetsToTxn and TxnOffsetCommit, WRITE on every topic of AddPartitionsToTxn, DESCRIBE for
DescribeTransactions and ListTransactions."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from minikafka.broker.kafka_wire import transactions
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.errors import ErrorCode


class RefusingCoordinator:
    """Fails the test if a refused request reaches it."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the coordinator's {name} was reached")


def context(allowed: set[tuple[AclOperation, ResourceType, str]]) -> Any:
    image = SimpleNamespace(topics_by_name={"orders": SimpleNamespace(partitions={0: None})})
    return SimpleNamespace(
        allowed=lambda operation, resource_type, name: (operation, resource_type, name) in allowed,
        transactions=RefusingCoordinator(),
        groups=RefusingCoordinator(),
        manager=SimpleNamespace(metadata=SimpleNamespace(image=image)),
    )


def request(version: int, **body: Any) -> Any:
    return SimpleNamespace(header=SimpleNamespace(api_version=version), body=SimpleNamespace(**body))


TXN = {"transactional_id": "payments", "producer_id": 7, "producer_epoch": 0}
WRITE_TXN = (AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, "payments")


def test_end_txn_without_write_on_the_transactional_id_is_refused() -> None:
    answer = asyncio.run(transactions.handle_end_txn(context(set()), request(3, committed=True, **TXN)))
    assert answer.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


def test_add_offsets_needs_read_on_the_group_too() -> None:
    ask = request(3, group_id="g", **TXN)
    assert asyncio.run(transactions.handle_add_offsets(context(set()), ask)).error_code == (
        ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    )
    assert asyncio.run(transactions.handle_add_offsets(context({WRITE_TXN}), ask)).error_code == (
        ErrorCode.GROUP_AUTHORIZATION_FAILED
    )


def test_add_partitions_adds_nothing_when_a_topic_may_not_be_written() -> None:
    topics = [SimpleNamespace(name="orders", partitions=[0])]
    ask = request(
        3, v3_and_below_transactional_id="payments", v3_and_below_producer_id=7, v3_and_below_producer_epoch=0,
        v3_and_below_topics=topics,
    )  # fmt: skip
    answer = asyncio.run(transactions.handle_add_partitions(context({WRITE_TXN}), ask))
    (topic,) = answer.results_by_topic_v3_and_below
    assert [p.partition_error_code for p in topic.results_by_partition] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]


def test_describe_and_list_show_only_describable_ids() -> None:
    class Listing:
        def describe(self, _transactional_id: str) -> ErrorCode:
            return ErrorCode.TRANSACTIONAL_ID_NOT_FOUND

        def listed(self) -> list[Any]:
            from minikafka.broker.transaction.state import TxnState

            return [SimpleNamespace(transactional_id="payments", producer_id=7, state=TxnState.ONGOING, start_ms=0)]

    ctx = context(set())
    ctx.transactions = Listing()
    described = transactions.handle_describe(ctx, request(0, transactional_ids=["payments"]))
    assert [s.error_code for s in described.transaction_states] == [ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED]
    listed = transactions.handle_list(ctx, request(1, state_filters=[], producer_id_filters=[], duration_filter=-1))
    assert listed.transaction_states == ()
