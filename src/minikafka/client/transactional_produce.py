"""`minikafka produce --transactional-id ID`: generated records written in transactions of `--transaction-size`
records each, every `--abort-every`-th aborted, through the brokers' Kafka listeners (the gRPC client API has no
transactional ids). A transactional producer as Kafka's: FindCoordinator (key type 1), InitProducerId, then per
transaction AddPartitionsToTxn, one transactional batch to the partition's leader, EndTxn. Retriable errors
(the coordinator loading or moving, CONCURRENT_TRANSACTIONS while the last transaction's markers are written, a
leader moving) are retried until a deadline; any other error ends the command with its Kafka name and code."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.client.transaction_abort import leader_of
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch

FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, END_TXN, PRODUCE = 10, 22, 24, 26, 0
RETRIABLE = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NETWORK_EXCEPTION,
    }
)
RETRY_BACKOFF_S = 0.1  # Kafka's retry.backoff.ms
TIMEOUT = datetime.timedelta(seconds=30)


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


class TransactionalProducer:
    """One transactional id's producer on one partition."""

    def __init__(self, client: KafkaWireClient, transactional_id: str, topic: str, partition: int, deadline_s: float):
        self.client, self.transactional_id = client, transactional_id
        self.topic, self.partition, self.deadline_s = topic, partition, deadline_s
        self.producer_id, self.epoch, self.sequence = -1, -1, 0
        self.coordinator, self.leader = "", ""

    async def _retrying(self, what: str, call: Callable[[], Awaitable[ErrorCode]]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline_s
        while True:
            try:
                error = await call()
            except KafkaError as failure:
                error = failure.code
            if error == ErrorCode.NONE:
                return
            if error not in RETRIABLE or loop.time() > deadline:
                raise KafkaError(error, f"{what} for transactional id {self.transactional_id}")
            if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE):
                self.coordinator = ""
            if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE):
                self.leader = ""
            await asyncio.sleep(RETRY_BACKOFF_S)

    async def _to_coordinator(self, body: object) -> Any:
        if not self.coordinator:
            found = await self.client.any_broker(request_class(FIND_COORDINATOR, 3)(key=self.transactional_id,
                                                                                   key_type=1))  # fmt: skip
            error = ErrorCode.of(found.error_code)
            if error != ErrorCode.NONE:
                raise KafkaError(error, "FindCoordinator")
            self.coordinator = f"{found.host}:{found.port}"
        return await self.client.connection(self.coordinator).send(body)

    async def init(self) -> None:
        async def call() -> ErrorCode:
            response = await self._to_coordinator(
                request_class(INIT_PRODUCER_ID, 4)(
                    transactional_id=self.transactional_id,
                    transaction_timeout=datetime.timedelta(seconds=60),
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
            self.producer_id, self.epoch = response.producer_id, response.producer_epoch
            return ErrorCode.of(response.error_code)

        await self._retrying("InitProducerId", call)

    async def write(self, values: list[bytes], commit: bool) -> None:
        """One transaction: the partition added, the records in one batch, then committed or aborted."""
        await self._retrying("AddPartitionsToTxn", self._add_partition)
        batch = build_batch(
            [Record(v) for v in values],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            attributes=TRANSACTIONAL_FLAG,
        )
        await self._retrying("Produce", lambda: self._produce(batch))
        self.sequence += len(values)
        await self._retrying("EndTxn", lambda: self._end(commit))

    async def _add_partition(self) -> ErrorCode:
        cls = request_class(ADD_PARTITIONS_TO_TXN, 3)
        topic = nested(cls, "AddPartitionsToTxnTopic")(name=self.topic, partitions=(self.partition,))
        response = await self._to_coordinator(
            cls(
                v3_and_below_transactional_id=self.transactional_id,
                v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.epoch,
                v3_and_below_topics=(topic,),
            )
        )
        line = response.results_by_topic_v3_and_below[0].results_by_partition[0]
        return ErrorCode.of(line.partition_error_code)

    async def _produce(self, records: bytes) -> ErrorCode:
        if not self.leader:
            self.leader = await leader_of(self.client, self.topic, self.partition)
        cls = request_class(PRODUCE, 9)
        data = nested(cls, "PartitionProduceData")(index=self.partition, records=records)
        topic = nested(cls, "TopicProduceData")(name=self.topic, partition_data=(data,))
        body = cls(transactional_id=self.transactional_id, acks=-1, timeout=TIMEOUT, topic_data=(topic,))
        response = await self.client.connection(self.leader).send(body)
        return ErrorCode.of(response.responses[0].partition_responses[0].error_code)

    async def _end(self, commit: bool) -> ErrorCode:
        cls = request_class(END_TXN, 3)
        response = await self._to_coordinator(
            cls(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                committed=commit,
            )
        )
        return ErrorCode.of(response.error_code)


async def produce_transactionally(
    bootstrap: list[str], topic: str, partition: int, values: list[bytes], transactional_id: str,
    size: int, abort_every: int | None, deadline_s: float = 60.0,
) -> TransactionalSummary:  # fmt: skip
    client = KafkaWireClient(bootstrap)
    summary = TransactionalSummary()
    try:
        producer = TransactionalProducer(client, transactional_id, topic, partition, deadline_s)
        await producer.init()
        for txn in plan(len(values), size, abort_every):
            await producer.write(values[txn.first : txn.first + txn.count], txn.commit)
            if txn.commit:
                summary.committed_records += txn.count
                summary.committed_transactions += 1
            else:
                summary.aborted_records += txn.count
                summary.aborted_transactions += 1
    finally:
        await client.close()
    return summary
