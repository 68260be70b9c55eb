"""One transactional id's session with the cluster over the brokers' Kafka listeners, as Kafka's transactional
producer speaks it: FindCoordinator (key type 1), InitProducerId, then per transaction AddPartitionsToTxn, one
transactional batch to each partition's leader, EndTxn. Each request is retried on a retriable error (the
coordinator loading or moving, CONCURRENT_TRANSACTIONS while the last transaction's markers are written, a leader
moving) until a deadline; any other error is raised as a KafkaError with its Kafka name and code."""

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
TRANSACTION_TIMEOUT = datetime.timedelta(seconds=60)
PRODUCE_TIMEOUT = datetime.timedelta(seconds=30)


@dataclass(frozen=True)
class Rediscovery:
    """The errors after which the coordinator, or the partitions' leaders, are looked up again."""

    coordinator: frozenset[ErrorCode]
    leaders: frozenset[ErrorCode]


# Each address forgotten only on the error that says it moved.
ON_MOVED = Rediscovery(
    coordinator=frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}),
    leaders=frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.LEADER_NOT_AVAILABLE}),
)


class TransactionalSession:
    """One transactional id writing transactions over `partitions` of `topic`."""

    def __init__(
        self, client: KafkaWireClient, transactional_id: str, topic: str, partitions: list[int],
        deadline_s: float, rediscovery: Rediscovery = ON_MOVED,
    ) -> None:  # fmt: skip
        self.client, self.transactional_id, self.topic, self.partitions = client, transactional_id, topic, partitions
        self.deadline_s, self.rediscovery = deadline_s, rediscovery
        self.producer_id, self.epoch = -1, -1
        self.sequences = dict.fromkeys(partitions, 0)
        self.coordinator = ""
        self.leaders: dict[int, str] = {}

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
            if error in self.rediscovery.coordinator:
                self.coordinator = ""
            if error in self.rediscovery.leaders:
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

    async def add_partitions(self) -> None:
        """AddPartitionsToTxn for every partition of the session."""
        await self._retrying("AddPartitionsToTxn", self._add_partitions)

    async def produce(self, partition: int, values: list[bytes]) -> int:
        """One transactional batch of `values` to the partition's leader; its base offset."""
        batch = build_batch(
            [Record(v) for v in values],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequences[partition],
            attributes=TRANSACTIONAL_FLAG,
        )
        base_offset = -1

        async def call() -> ErrorCode:
            nonlocal base_offset
            if partition not in self.leaders:
                self.leaders[partition] = await leader_of(self.client, self.topic, partition)
            cls = request_class(PRODUCE, 9)
            data = nested(cls, "PartitionProduceData")(index=partition, records=batch)
            topic = nested(cls, "TopicProduceData")(name=self.topic, partition_data=(data,))
            body = cls(transactional_id=self.transactional_id, acks=-1, timeout=PRODUCE_TIMEOUT, topic_data=(topic,))
            answer = (await self.client.connection(self.leaders[partition]).send(body)).responses[0]
            line = answer.partition_responses[0]
            base_offset = line.base_offset
            return ErrorCode.of(line.error_code)

        await self._retrying("Produce", call)
        self.sequences[partition] += len(values)
        return base_offset

    async def end(self, commit: bool) -> None:
        """EndTxn: the open transaction committed or aborted."""
        await self._retrying("EndTxn", lambda: self._end(commit))

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
