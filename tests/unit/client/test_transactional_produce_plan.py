"""`produce --transactional-id`: which records each transaction holds and which transactions are aborted."""

from __future__ import annotations

from minikafka.client.transactional_produce import Transaction, TransactionalSummary, plan


def test_records_are_cut_into_transactions_of_the_size_the_last_one_short() -> None:
    assert plan(10, 3, None) == [
        Transaction(0, 3, True),
        Transaction(3, 3, True),
        Transaction(6, 3, True),
        Transaction(9, 1, True),
    ]


def test_every_kth_transaction_is_aborted_counted_from_one() -> None:
    assert [t.commit for t in plan(10, 2, 2)] == [True, False, True, False, True]
    assert [t.commit for t in plan(3, 1, 1)] == [False, False, False]


def test_no_records_no_transaction() -> None:
    assert plan(0, 5, 2) == []


def test_the_summary_line() -> None:
    summary = TransactionalSummary(6, 2, 4, 2)
    assert summary.line() == "committed 6 records in 2 transactions, aborted 4 in 2"
