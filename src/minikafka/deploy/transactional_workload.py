"""The chaos run's transactional producers (`chaos --transactional-producers N`): each, with its own
transactional id, writes transactions over every partition of the transactional topic (one batch per partition),
every ABORT_EVERY-th aborted on purpose, through the brokers' Kafka listeners (minikafka's own transactional
producer requests, as `produce --transactional-id` sends them).

When a transaction ends, its records go to `history/produce-txn-<name>.jsonl`, one produce-history line each
(docs/events.md) with `transactional_id`, `transaction` (its number), `transaction_end` (the EndTxn sent: commit,
or abort, also when none could be sent) and `end_acknowledged`. A producer whose transaction failed, or whose
EndTxn was not answered, starts again with InitProducerId: the coordinator bumps its epoch and aborts whatever it
still has open. The final read of the topic is read_committed.

Every RESTART_EVERY-th transaction the producer crashes, as a process would: in turn it leaves the transaction
half written (a batch to half the partitions, no EndTxn), or sends EndTxn(commit) and goes before its answer comes.
A new session with the same transactional id (a new connection, InitProducerId) then fences the old one: the
coordinator aborts the half-written transaction, and the unanswered commit is undecided (`transaction_end` commit,
`end_acknowledged` false: all of it or none may be read, never part).
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
RESTART_EVERY = 5  # transactions 5, 10, ... of each producer are cut short by its crash
UNANSWERED_WAIT_S = 0.005  # how long a crashing producer waits after sending its last EndTxn: its answer is lost
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
    crashes: int = 0  # sessions ended mid-transaction on purpose, each followed by a new one fencing it

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

    async def crash(self, values: dict[int, list[bytes]], commit: bool, unanswered_commit: bool) -> Outcome:
        """A transaction cut short by the producer's crash: half its batches and no EndTxn, or (`unanswered_commit`,
        when it was to be committed) every batch and an EndTxn(commit) whose answer is never read."""
        outcome = Outcome(values)
        sending_commit = unanswered_commit and commit
        partitions = list(values) if sending_commit else list(values)[: max(1, len(values) // 2)]
        try:
            await self.add_partitions()
            for partition in partitions:
                await self._produce_into(outcome, partition, values[partition])
        except KafkaError:
            outcome.failed = True
        outcome.end = "commit" if sending_commit and not outcome.failed else "abort"
        if outcome.end == "commit":
            sending = asyncio.ensure_future(self._end(True, self.protocol.end_txn_version))
            await asyncio.wait([sending], timeout=UNANSWERED_WAIT_S)
            sending.cancel()  # the producer is gone: whatever the coordinator answers is never read
            sending.add_done_callback(lambda done: done.cancelled() or done.exception())
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
    counts = TransactionCounts()
    history.parent.mkdir(parents=True, exist_ok=True)
    with history.open("w", encoding="utf-8") as out:
        await _transactions(bootstrap, name, partitions, counts, out, stop)
    return counts


def _session(bootstrap: list[str], name: str, partitions: list[int]) -> ChaosTransactionalProducer:
    """A new session of the producer's transactional id, on connections of its own."""
    return ChaosTransactionalProducer(KafkaWireClient(bootstrap), f"chaos-{name}", TXN_TOPIC, partitions)


async def _transactions(
    bootstrap: list[str], name: str, partitions: list[int], counts: TransactionCounts, out: TextIO,
    stop: threading.Event,
) -> None:  # fmt: skip
    number, ready = 0, False
    producer = _session(bootstrap, name, partitions)
    try:
        while not stop.is_set():
            if not ready:
                try:
                    await producer.init()
                    ready = True
                except KafkaError:
                    await asyncio.sleep(RETRY_BACKOFF_S)  # the coordinator is still away: ask again
                    continue
            commit = (number + 1) % ABORT_EVERY != 0
            crash = (number + 1) % RESTART_EVERY == 0
            values = {p: [f"{name}-{number:06d}-{p}-{i}".encode() for i in range(RECORDS_PER_PARTITION)]
                      for p in partitions}  # fmt: skip
            started = time.monotonic()
            if crash:
                unanswered = (number + 1) % (2 * RESTART_EVERY) == 0  # every other crash: after its EndTxn(commit)
                outcome = await producer.crash(values, commit, unanswered_commit=unanswered)
            else:
                outcome = await producer.transaction(values, commit)
            out.write(history_lines(producer.topic, producer.transactional_id, number, outcome,
                                    (time.monotonic() - started) * 1000))  # fmt: skip
            out.flush()
            _count(counts, outcome, commit)
            if crash:
                counts.crashes += 1
                await producer.client.close()
                producer, ready = _session(bootstrap, name, partitions), False  # its InitProducerId fences the old
            elif outcome.failed:
                counts.restarts += 1
                ready = False
            number += 1
    finally:
        await producer.client.close()
