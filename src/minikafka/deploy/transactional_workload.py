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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.client.transaction_abort import leader_of
from minikafka.client.transactional_produce import (
    ADD_PARTITIONS_TO_TXN,
    END_TXN,
    FIND_COORDINATOR,
    INIT_PRODUCER_ID,
    PRODUCE,
    RETRIABLE,
    RETRY_BACKOFF_S,
)
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch

TXN_TOPIC = "chaos-txn"
RECORDS_PER_PARTITION = 3  # records of one transaction in each partition
ABORT_EVERY = 4  # transactions 4, 8, ... of each producer are aborted on purpose
RETRY_DEADLINE_S = 30.0  # how long one request is retried through faults before the transaction is given up
TRANSACTION_TIMEOUT = datetime.timedelta(seconds=60)
PRODUCE_TIMEOUT = datetime.timedelta(seconds=30)
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


class ChaosTransactionalProducer:
    """One transactional id writing transactions over `partitions` of `topic`."""

    def __init__(self, client: KafkaWireClient, transactional_id: str, topic: str, partitions: list[int]) -> None:
        self.client, self.transactional_id, self.topic, self.partitions = client, transactional_id, topic, partitions
        self.producer_id, self.epoch = -1, -1
        self.sequences = dict.fromkeys(partitions, 0)
        self.coordinator = ""
        self.leaders: dict[int, str] = {}

    async def _retrying(self, what: str, call: Callable[[], Awaitable[ErrorCode]]) -> None:
        deadline = time.monotonic() + RETRY_DEADLINE_S
        while True:
            try:
                error = await call()
            except KafkaError as failure:
                error = failure.code
            if error == ErrorCode.NONE:
                return
            if error not in RETRIABLE or time.monotonic() > deadline:
                raise KafkaError(error, f"{what} for transactional id {self.transactional_id}")
            if error in MOVED:
                self.coordinator = ""
                self.leaders.clear()
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def _to_coordinator(self, body: object) -> Any:
        if not self.coordinator:
            request = request_class(FIND_COORDINATOR, 3)(key=self.transactional_id, key_type=1)
            found = await self.client.any_broker(request)
            error = ErrorCode.of(found.error_code)
            if error != ErrorCode.NONE:
                raise KafkaError(error, "FindCoordinator")
            self.coordinator = f"{found.host}:{found.port}"
        return await self.client.connection(self.coordinator).send(body)

    async def init(self) -> None:
        """InitProducerId: a new epoch (fencing the previous one and aborting its open transaction)."""

        async def call() -> ErrorCode:
            response = await self._to_coordinator(
                request_class(INIT_PRODUCER_ID, 4)(
                    transactional_id=self.transactional_id,
                    transaction_timeout=TRANSACTION_TIMEOUT,
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
            self.producer_id, self.epoch = response.producer_id, response.producer_epoch
            return ErrorCode.of(response.error_code)

        await self._retrying("InitProducerId", call)
        self.sequences = dict.fromkeys(self.partitions, 0)

    async def transaction(self, values: dict[int, list[bytes]], commit: bool) -> Outcome:
        """One transaction: the partitions added, a batch to each, then EndTxn (an abort when anything failed)."""
        outcome = Outcome(values)
        try:
            await self._retrying("AddPartitionsToTxn", self._add_partitions)
            for partition, batch_values in values.items():
                await self._produce(partition, batch_values, outcome)
        except KafkaError:
            outcome.failed = True
        outcome.end = "commit" if commit and not outcome.failed else "abort"
        try:
            await self._retrying("EndTxn", lambda: self._end(outcome.end == "commit"))
            outcome.end_acknowledged = True
        except KafkaError:
            outcome.failed = True
        return outcome

    async def _produce(self, partition: int, batch_values: list[bytes], outcome: Outcome) -> None:
        batch = build_batch(
            [Record(v) for v in batch_values],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequences[partition],
            attributes=TRANSACTIONAL_FLAG,
        )

        async def call() -> ErrorCode:
            if partition not in self.leaders:
                self.leaders[partition] = await leader_of(self.client, self.topic, partition)
            cls = request_class(PRODUCE, 9)
            data = nested(cls, "PartitionProduceData")(index=partition, records=batch)
            topic = nested(cls, "TopicProduceData")(name=self.topic, partition_data=(data,))
            body = cls(transactional_id=self.transactional_id, acks=-1, timeout=PRODUCE_TIMEOUT, topic_data=(topic,))
            answer = (await self.client.connection(self.leaders[partition]).send(body)).responses[0]
            line = answer.partition_responses[0]
            outcome.base_offsets[partition] = line.base_offset
            return ErrorCode.of(line.error_code)

        try:
            await self._retrying("Produce", call)
        except KafkaError as error:
            outcome.base_offsets.pop(partition, None)
            outcome.errors[partition] = error.code.name
            raise
        self.sequences[partition] += len(batch_values)

    async def _add_partitions(self) -> ErrorCode:
        cls = request_class(ADD_PARTITIONS_TO_TXN, 3)
        topic = nested(cls, "AddPartitionsToTxnTopic")(name=self.topic, partitions=tuple(self.partitions))
        response = await self._to_coordinator(
            cls(
                v3_and_below_transactional_id=self.transactional_id,
                v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.epoch,
                v3_and_below_topics=(topic,),
            )
        )
        lines = response.results_by_topic_v3_and_below[0].results_by_partition
        codes = [ErrorCode.of(line.partition_error_code) for line in lines]
        return next((code for code in codes if code != ErrorCode.NONE), ErrorCode.NONE)

    async def _end(self, commit: bool) -> ErrorCode:
        response = await self._to_coordinator(
            request_class(END_TXN, 3)(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                committed=commit,
            )
        )
        return ErrorCode.of(response.error_code)


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
