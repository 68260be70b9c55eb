"""`minikafka produce --transactional-id ID`: generated records written in transactions of `--transaction-size`
records each, every `--abort-every`-th aborted, through the brokers' Kafka listeners (the gRPC client API has no
transactional ids), one TransactionalSession on the partition: retriable errors are retried until a deadline; any
other error ends the command with its Kafka name and code."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.client.kafka_wire_client import KafkaWireClient
from minikafka.client.transactional_session import TransactionalSession


@dataclass(frozen=True)
class Transaction:
    first: int  # index of its first record
    count: int
    commit: bool


def plan(num_records: int, size: int, abort_every: int | None) -> list[Transaction]:
    """The transactions writing `num_records`: `size` records each (the last may be short); with `abort_every` K,
    transactions K, 2K, ... (counted from 1) are aborted."""
    return [
        Transaction(first, min(size, num_records - first), abort_every is None or (n + 1) % abort_every != 0)
        for n, first in enumerate(range(0, num_records, size))
    ]


@dataclass
class TransactionalSummary:
    committed_records: int = 0
    committed_transactions: int = 0
    aborted_records: int = 0
    aborted_transactions: int = 0

    def line(self) -> str:
        return (
            f"committed {self.committed_records} records in {self.committed_transactions} transactions, "
            f"aborted {self.aborted_records} in {self.aborted_transactions}"
        )


async def produce_transactionally(
    bootstrap: list[str], topic: str, partition: int, values: list[bytes], transactional_id: str,
    size: int, abort_every: int | None, deadline_s: float = 60.0,
) -> TransactionalSummary:  # fmt: skip
    client = KafkaWireClient(bootstrap)
    summary = TransactionalSummary()
    try:
        session = TransactionalSession(client, transactional_id, topic, [partition], deadline_s)
        await session.init()
        for txn in plan(len(values), size, abort_every):
            await session.add_partitions()
            await session.produce(partition, values[txn.first : txn.first + txn.count])
            await session.end(txn.commit)
            if txn.commit:
                summary.committed_records += txn.count
                summary.committed_transactions += 1
            else:
                summary.aborted_records += txn.count
                summary.aborted_transactions += 1
    finally:
        await client.close()
    return summary
