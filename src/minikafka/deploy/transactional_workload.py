"""The chaos run's transactional producers (`chaos --transactional-producers N`): each, with its own
transactional id, writes transactions over every partition of the transactional topic (one batch per partition),
every ABORT_EVERY-th aborted on purpose, through the brokers' Kafka listeners (minikafka's own transactional
producer requests, as `produce --transactional-id` sends them).

When a transaction ends, its records go to `history/produce-txn-<name>.jsonl`, one produce-history line each
(docs/events.md) with `transactional_id`, `transaction` (its number), `transaction_end` (the EndTxn sent: commit,
or abort, also when none could be sent) and `end_acknowledged`. A producer whose transaction failed, or whose
EndTxn was not answered, starts again with InitProducerId: the coordinator bumps its epoch and aborts whatever it
still has open. The final read of the topic is read_committed.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from minikafka.client.kafka_wire_client import KafkaWireClient
from minikafka.client.transactional_session import RETRY_BACKOFF_S, Rediscovery, TransactionalSession
from minikafka.common.errors import ErrorCode, KafkaError

TXN_TOPIC = "chaos-txn"
RECORDS_PER_PARTITION = 3  # records of one transaction in each partition
ABORT_EVERY = 4  # transactions 4, 8, ... of each producer are aborted on purpose
RETRY_DEADLINE_S = 30.0  # how long one request is retried through faults before the transaction is given up
# Errors after which the coordinator or the leader we knew may be gone: find them again.
MOVED = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.REQUEST_TIMED_OUT,
    }
)
FORGET_ON_MOVED = Rediscovery(coordinator=MOVED, leaders=MOVED)


@dataclass
class TransactionCounts:
    committed: int = 0  # commits acknowledged
    aborted: int = 0  # transactions ended with an abort (on purpose or after a failure)
    aborted_on_purpose: int = 0
    undecided: int = 0  # commits sent and not acknowledged
    committed_records: int = 0
    restarts: int = 0  # InitProducerId again after a failure

    def add(self, other: TransactionCounts) -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))


@dataclass
class Outcome:
    """One transaction as its producer saw it."""

    values: dict[int, list[bytes]]  # partition -> its records' values
    base_offsets: dict[int, int] = field(default_factory=dict)  # partitions whose batch was acknowledged
    errors: dict[int, str] = field(default_factory=dict)  # partitions whose batch failed: the error
    end: str = "abort"
    end_acknowledged: bool = False
    failed: bool = False  # a request failed for good: the producer starts again


class ChaosTransactionalProducer(TransactionalSession):
    """One transactional id writing transactions over `partitions` of `topic`, each ending in an Outcome."""

    def __init__(self, client: KafkaWireClient, transactional_id: str, topic: str, partitions: list[int]) -> None:
        super().__init__(client, transactional_id, topic, partitions, RETRY_DEADLINE_S, FORGET_ON_MOVED)

    async def transaction(self, values: dict[int, list[bytes]], commit: bool) -> Outcome:
        """One transaction: the partitions added, a batch to each, then EndTxn (an abort when anything failed)."""
        outcome = Outcome(values)
        try:
            await self.add_partitions()
            for partition, batch_values in values.items():
                await self._produce_into(outcome, partition, batch_values)
        except KafkaError:
            outcome.failed = True
        outcome.end = "commit" if commit and not outcome.failed else "abort"
        try:
            await self.end(outcome.end == "commit")
            outcome.end_acknowledged = True
        except KafkaError:
            outcome.failed = True
        return outcome

    async def _produce_into(self, outcome: Outcome, partition: int, batch_values: list[bytes]) -> None:
        try:
            outcome.base_offsets[partition] = await self.produce(partition, batch_values)
        except KafkaError as error:
            outcome.errors[partition] = error.code.name
            raise


def history_lines(topic: str, transactional_id: str, number: int, outcome: Outcome, latency_ms: float) -> str:
    """The transaction's records as produce-history lines (docs/events.md)."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lines = []
    for partition, values in outcome.values.items():
        base = outcome.base_offsets.get(partition)
        error = outcome.errors.get(partition, None if base is not None else "NOT_SENT")
        for index, value in enumerate(values):
            line = {
                "ts": now,
                "topic": topic,
                "partition": partition,
                "offset": None if base is None else base + index,
                "value": value.decode(),
                "acks": "all",
                "error": error,
                "latency_ms": round(latency_ms, 3),
                "idempotent": True,
                "transactional_id": transactional_id,
                "transaction": number,
                "transaction_end": outcome.end,
                "end_acknowledged": outcome.end_acknowledged,
            }
            if error == "NOT_SENT":
                line["definite"] = True  # never sent: certainly not written
            lines.append(json.dumps(line, separators=(",", ":")) + "\n")
    return "".join(lines)


def _count(counts: TransactionCounts, outcome: Outcome, commit: bool) -> None:
    records = sum(len(v) for v in outcome.values.values())
    if outcome.end == "commit" and outcome.end_acknowledged:
        counts.committed += 1
        counts.committed_records += records
    elif outcome.end == "commit":
        counts.undecided += 1
    else:
        counts.aborted += 1
        counts.aborted_on_purpose += not commit


async def run_transactional_producer(
    bootstrap: list[str], name: str, partitions: list[int], history: Path, stop: threading.Event
) -> TransactionCounts:
    """Transactions until `stop` is set (the one under way is finished), each logged as it ends."""
    client = KafkaWireClient(bootstrap)
    counts = TransactionCounts()
    producer = ChaosTransactionalProducer(client, f"chaos-{name}", TXN_TOPIC, partitions)
    history.parent.mkdir(parents=True, exist_ok=True)
    try:
        with history.open("w", encoding="utf-8") as out:
            await _transactions(producer, name, counts, out, stop)
    finally:
        await client.close()
    return counts


async def _transactions(
    producer: ChaosTransactionalProducer, name: str, counts: TransactionCounts, out: TextIO, stop: threading.Event
) -> None:
    number, ready = 0, False
    while not stop.is_set():
        if not ready:
            try:
                await producer.init()
                ready = True
            except KafkaError:
                await asyncio.sleep(RETRY_BACKOFF_S)  # the coordinator is still away: ask again
                continue
        commit = (number + 1) % ABORT_EVERY != 0
        values = {
            p: [f"{name}-{number:06d}-{p}-{i}".encode() for i in range(RECORDS_PER_PARTITION)]
            for p in producer.partitions
        }
        started = time.monotonic()
        outcome = await producer.transaction(values, commit)
        out.write(history_lines(producer.topic, producer.transactional_id, number, outcome,
                                (time.monotonic() - started) * 1000))  # fmt: skip
        out.flush()
        _count(counts, outcome, commit)
        if outcome.failed:
            counts.restarts += 1
            ready = False
        number += 1
