"""One transactional id's session with the cluster over the brokers' Kafka listeners, as Kafka's transactional
producer speaks it: FindCoordinator (key type 1), InitProducerId, then per transaction AddPartitionsToTxn, one
transactional batch to each partition's leader, EndTxn. With the cluster's `transaction.version` finalized at 2 it
speaks KIP-890 part 2 as Kafka's Java producer 4.0 does (`transaction_protocol.py`): no AddPartitionsToTxn, Produce
v12, EndTxn v5 whose answer gives the producer id and epoch to go on with. Each request is retried on a retriable
error (the coordinator loading or moving, CONCURRENT_TRANSACTIONS while the last transaction's markers are written,
a leader moving) until a deadline; any other error is raised as a KafkaError with its Kafka name and code.

A consume-transform-produce client commits its consumed offsets inside the transaction with
`send_offsets_to_transaction` (Kafka's sendOffsetsToTransaction): AddOffsetsToTxn to the transaction coordinator
(none at transaction version 2, where TxnOffsetCommit v5 adds the group's partition), then TxnOffsetCommit to the
group's coordinator, naming the member and generation so a zombie member is fenced (KIP-447). The offsets become
the group's at the transaction's COMMIT marker, and go with an abort."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.client.group_member import committed_topics
from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.client.transaction_abort import leader_of
from minikafka.client.transaction_protocol import TransactionProtocol
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch

FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, END_TXN, PRODUCE = 10, 22, 24, 26, 0
ADD_OFFSETS_TO_TXN, TXN_OFFSET_COMMIT = 25, 28
API_VERSIONS = 18
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


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """Kafka's ConsumerGroupMetadata: the consumer whose offsets a transaction commits. The group coordinator refuses
    a TxnOffsetCommit of a member or generation no longer current (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION)."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


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
        self.protocol = TransactionProtocol()
        self.epoch_bump_required = False
        self.group_coordinators: dict[str, str] = {}  # group id -> its coordinator's Kafka address

    async def _retrying(
        self, what: str, call: Callable[[], Awaitable[ErrorCode]], moved: Callable[[], None] | None = None
    ) -> None:
        """`moved`: what to forget when the coordinator asked moved (default: the transaction coordinator)."""
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
                if moved is None:
                    self.coordinator = ""
                else:
                    moved()
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
        """InitProducerId: a new epoch (fencing the previous one and aborting its open transaction), speaking the
        transaction protocol of the cluster's finalized transaction.version."""
        await self._read_protocol(initializing=True)
        self.epoch_bump_required = False
        await self._init_producer_id(-1, -1)

    async def _init_producer_id(self, producer_id: int, epoch: int) -> None:
        """(-1, -1): a new producer of the id; else KIP-360's bump of the producer id and epoch held."""

        async def call() -> ErrorCode:
            response = await self._to_coordinator(
                request_class(INIT_PRODUCER_ID, 4)(
                    transactional_id=self.transactional_id,
                    transaction_timeout=TRANSACTION_TIMEOUT,
                    producer_id=producer_id,
                    producer_epoch=epoch,
                )
            )
            error = ErrorCode.of(response.error_code)
            if error == ErrorCode.NONE:
                self.producer_id, self.epoch = response.producer_id, response.producer_epoch
            return error

        await self._retrying("InitProducerId", call)
        self.sequences = dict.fromkeys(self.partitions, 0)

    async def _read_protocol(self, initializing: bool) -> None:
        """The finalized transaction.version from ApiVersions v3, as Kafka's client reads it."""
        response = await self.client.any_broker(
            request_class(API_VERSIONS, 3)(client_software_name="minikafka", client_software_version="1")
        )
        if ErrorCode.of(response.error_code) != ErrorCode.NONE:
            return
        finalized = {f.name: int(f.max_version_level) for f in response.finalized_features}
        read = self.protocol.read(finalized, int(response.finalized_features_epoch), initializing)
        self.protocol = read.protocol
        self.epoch_bump_required = self.epoch_bump_required or read.epoch_bump_required

    async def add_partitions(self) -> None:
        """AddPartitionsToTxn for every partition of the session; none at transaction version 2, where the leader
        adds a partition at its first transactional batch."""
        if self.protocol.adds_partitions:
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
            cls = request_class(PRODUCE, self.protocol.produce_version)
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
        """EndTxn: the open transaction committed or aborted, in the protocol it began with. Then the finalized
        level is read again for the next transaction; on an upgrade to version 2, the epoch is bumped first."""
        version = self.protocol.end_txn_version
        await self._retrying("EndTxn", lambda: self._end(commit, version))
        try:
            await self._read_protocol(initializing=False)
        except KafkaError:
            pass  # no broker answered: the next transaction keeps this one's protocol
        if self.epoch_bump_required:
            await self._init_producer_id(self.producer_id, self.epoch)
            self.epoch_bump_required = False

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

    async def _end(self, commit: bool, version: int) -> ErrorCode:
        response = await self._to_coordinator(
            request_class(END_TXN, version)(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                committed=commit,
            )
        )
        error = ErrorCode.of(response.error_code)
        bumped = (int(getattr(response, "producer_id", -1)), int(getattr(response, "producer_epoch", -1)))
        if error == ErrorCode.NONE and bumped[1] >= 0 and bumped != (self.producer_id, self.epoch):
            # EndTxn v5 ended the transaction at a new epoch (or producer id): sequences start again from 0.
            self.producer_id, self.epoch = bumped
            self.sequences = dict.fromkeys(self.partitions, 0)
        return error

    # ---- offsets committed in the transaction (consume-transform-produce) ----

    async def send_offsets_to_transaction(
        self, offsets: Mapping[tuple[str, int], int], group: ConsumerGroupMetadata
    ) -> None:
        """Kafka's sendOffsetsToTransaction: the group's next offsets to read, (topic, partition) -> offset,
        committed by the open transaction. A refusal (the member fenced, the producer fenced) is raised as a
        KafkaError; the transaction should then be aborted."""
        if not offsets:
            return
        if self.protocol.adds_partitions:
            await self._retrying("AddOffsetsToTxn", lambda: self._add_offsets(group.group_id))

        def forget() -> None:
            self.group_coordinators.pop(group.group_id, None)

        await self._retrying("TxnOffsetCommit", lambda: self._txn_offset_commit(offsets, group), forget)

    async def _add_offsets(self, group_id: str) -> ErrorCode:
        response = await self._to_coordinator(
            request_class(ADD_OFFSETS_TO_TXN, 3)(
                transactional_id=self.transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                group_id=group_id,
            )
        )
        return ErrorCode.of(response.error_code)

    async def _group_coordinator(self, group_id: str) -> str:
        if group_id not in self.group_coordinators:
            request = request_class(FIND_COORDINATOR, 3)(key=group_id, key_type=0)
            found = await self.client.any_broker(request)
            error = ErrorCode.of(found.error_code)
            if error != ErrorCode.NONE:
                raise KafkaError(error, f"FindCoordinator for group {group_id}")
            self.group_coordinators[group_id] = f"{found.host}:{found.port}"
        return self.group_coordinators[group_id]

    async def _txn_offset_commit(
        self, offsets: Mapping[tuple[str, int], int], group: ConsumerGroupMetadata
    ) -> ErrorCode:
        """TxnOffsetCommit v3 (v5 at transaction version 2); the first partition's error, NONE when all stored."""
        cls = request_class(TXN_OFFSET_COMMIT, 5 if self.protocol.v2 else 3)
        topics = committed_topics(cls, "TxnOffsetCommitRequest", offsets)
        address = await self._group_coordinator(group.group_id)
        response = await self.client.connection(address).send(
            cls(
                transactional_id=self.transactional_id,
                group_id=group.group_id,
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                generation_id=group.generation_id,
                member_id=group.member_id,
                group_instance_id=group.group_instance_id,
                topics=topics,
            )
        )
        codes = [ErrorCode.of(p.error_code) for t in response.topics for p in t.partitions]
        return next((code for code in codes if code != ErrorCode.NONE), ErrorCode.NONE)
