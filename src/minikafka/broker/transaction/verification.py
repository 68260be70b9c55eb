"""KIP-890 part 1, the partition leader's side (Kafka's ReplicaManager.appendRecords with transaction verification):
before appending a producer's first transactional batch to a partition, the leader asks the transaction
coordinator whether the partition is in that producer's ongoing transaction (AddPartitionsToTxn with VerifyOnly:
the coordinator's own broker directly, another over the inter-broker gRPC listener). Only a yes appends, and only
if no marker for the producer was written here meanwhile (the log's verification guard).

A producer of transaction.version 2 (KIP-890 part 2, Produce v12) sends no AddPartitionsToTxn: the leader asks the
coordinator to add the partition instead (AddPartitionsToTxn v5, the same call without VerifyOnly). While the
coordinator answers CONCURRENT_TRANSACTIONS (the producer's last transaction's markers being written) the leader asks
again every add.partitions.to.txn.retry.backoff.ms for up to add.partitions.to.txn.retry.backoff.max.ms (capped by
request.timeout.ms), as Kafka's ReplicaManager does, rather than have the producer retry a whole produce.

This is what stops a produce delayed on the network from landing after its transaction was aborted, where it would
open a transaction no coordinator knows of and hold the last stable offset back for good. Later batches of the
same transaction skip the question: the transaction is open in the log.

The appends of one partition wait for each other in arrival order, so a producer's pipelined batches stay in
sequence while their verification is under way."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import grpc
import structlog

from minikafka.broker.group.state import TopicPartitionKey
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProduceResult
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.transaction.coordinator import TransactionCoordinator
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import PeerChannels
from minikafka.common.record_batch import CorruptRecordError, read_header
from minikafka.pb import broker_pb2, broker_pb2_grpc

CALL_TIMEOUT_S = 10.0
# The coordinator cannot answer now: the producer retries, as it does on NOT_ENOUGH_REPLICAS (Kafka's mapping).
RETRIABLE = frozenset(
    {
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.NETWORK_EXCEPTION,
    }
)


def produce_error(error: ErrorCode) -> ErrorCode:
    """What a produce is answered for the coordinator's refusal, as Kafka's AddPartitionsToTxnManager maps it:
    PRODUCER_FENCED is INVALID_PRODUCER_EPOCH, which producers take for being fenced (librdkafka's fatal error; it
    takes PRODUCER_FENCED on a produce for an abortable one), and a coordinator not ready is NOT_ENOUGH_REPLICAS."""
    if error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return ErrorCode.NOT_ENOUGH_REPLICAS if error in RETRIABLE else error


@dataclass(frozen=True)
class AddPartitionsRetry:
    """add.partitions.to.txn.retry.backoff.ms and the time the retries may take (Kafka's retryTimeoutMs)."""

    backoff_ms: int
    timeout_ms: int

    def next_attempt_in_ms(self, error: ErrorCode, started_ms: int, now_ms: int) -> int | None:
        """How long to wait before asking the coordinator again, or None to answer `error` now."""
        if error != ErrorCode.CONCURRENT_TRANSACTIONS or now_ms - started_ms >= self.timeout_ms:
            return None
        return self.backoff_ms


class ProduceVerifier:
    def __init__(self, manager: ReplicaManager, coordinator: TransactionCoordinator) -> None:
        self.manager = manager
        self.coordinator = coordinator
        self._channels = PeerChannels(manager.config.inter_node_tls)
        self._last: dict[TopicPartition, asyncio.Future[ProduceResult]] = {}
        self._log = structlog.get_logger()
        config = manager.config
        self.retry = AddPartitionsRetry(
            config.add_partitions_to_txn_retry_backoff_ms,
            min(config.add_partitions_to_txn_retry_backoff_max_ms, config.request_timeout_ms),
        )

    async def close(self) -> None:
        await self._channels.close()

    def produce(
        self,
        tp: TopicPartition,
        records: bytes,
        acks: int,
        timeout_ms: int,
        transactional_id: str | None,
        add_partitions: bool = False,
    ) -> asyncio.Future[ProduceResult]:
        """The replica manager's produce, after verification where it is needed. `add_partitions`: a producer of
        transaction.version 2, which sends no AddPartitionsToTxn: its first batch to the partition adds the
        partition to its transaction at the coordinator (whatever transaction.partition.verification.enable says,
        as in Kafka)."""
        pending = self._last.get(tp)
        if pending is not None and pending.done():
            del self._last[tp]
            pending = None
        replica = self.manager.replicas.get(tp)
        checked = self.manager.transaction_verification or add_partitions
        if not checked or transactional_id is None or replica is None:
            return self._after(pending, lambda: self.manager.produce(tp, records, acks, timeout_ms))
        try:
            header = read_header(records)
        except CorruptRecordError:
            return self.manager.produce(tp, records, acks, timeout_ms)  # the log refuses it, with its reason
        state = replica.log.producer_state
        if not header.is_transactional or state.has_ongoing_transaction(header.producer_id, header.producer_epoch):
            return self._after(pending, lambda: self.manager.produce(tp, records, acks, timeout_ms))
        guard = replica.log.start_verification(header.producer_id, header.producer_epoch, add_partitions)
        asked = (transactional_id, header.producer_id, header.producer_epoch, tp)
        verified = self._add_retrying(*asked) if add_partitions else self._verify(*asked)
        job = asyncio.ensure_future(self._verified_append(pending, verified, tp, records, acks, timeout_ms, guard))
        self._last[tp] = job
        return job

    @staticmethod
    def _after(
        pending: asyncio.Future[ProduceResult] | None, append: Callable[[], asyncio.Future[ProduceResult]]
    ) -> asyncio.Future[ProduceResult]:
        """Appends now unless a verified append of the partition is still waiting: then after it."""
        if pending is None:
            return append()

        async def later() -> ProduceResult:
            await asyncio.wait([pending])
            return await append()

        return asyncio.ensure_future(later())

    async def _verified_append(
        self,
        pending: asyncio.Future[ProduceResult] | None,
        verified: Awaitable[ErrorCode],
        tp: TopicPartition,
        records: bytes,
        acks: int,
        timeout_ms: int,
        guard: int,
    ) -> ProduceResult:
        error = await verified
        if pending is not None:
            await asyncio.wait([pending])
        if error != ErrorCode.NONE:
            return ProduceResult(produce_error(error), message=f"transaction verification of {tp}: {error.name}")
        return await self.manager.produce(tp, records, acks, timeout_ms, verification_guard=guard)

    async def _add_retrying(self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition) -> ErrorCode:
        """The implicit AddPartitionsToTxn of a Produce v12, asked again while it is CONCURRENT_TRANSACTIONS."""
        loop = asyncio.get_running_loop()
        started_ms = int(loop.time() * 1000)
        while True:
            error = await self._ask(transactional_id, producer_id, epoch, tp, True)
            wait_ms = self.retry.next_attempt_in_ms(error, started_ms, int(loop.time() * 1000))
            if wait_ms is None:
                self._log_refusal(error, transactional_id, producer_id, epoch, tp, True)
                return error
            await asyncio.sleep(wait_ms / 1000)

    async def add_to_transaction(
        self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition
    ) -> ErrorCode:
        """transaction.version 2's implicit AddPartitionsToTxn, asked by this broker for a client (a group
        coordinator's TxnOffsetCommit v5 adds the group's __consumer_offsets partition this way)."""
        return await self._verify(transactional_id, producer_id, epoch, tp, True)

    async def _verify(
        self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition, add: bool = False
    ) -> ErrorCode:
        error = await self._ask(transactional_id, producer_id, epoch, tp, add)
        self._log_refusal(error, transactional_id, producer_id, epoch, tp, add)
        return error

    async def _ask(
        self, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition, add: bool
    ) -> ErrorCode:
        partition = TopicPartitionKey(tp.topic, tp.partition)
        found = self.coordinator.find_coordinator(transactional_id)
        if found.error != ErrorCode.NONE:
            return found.error
        if found.node_id == self.manager.config.node_id and add:
            added = await self.coordinator.add_partitions(transactional_id, producer_id, epoch, [partition], 2)
            return added.error
        if found.node_id == self.manager.config.node_id:
            return self.coordinator.verify(transactional_id, producer_id, epoch, [partition])[partition]
        return await self._verify_remotely(found.node_id, transactional_id, producer_id, epoch, tp, add)

    def _log_refusal(
        self, error: ErrorCode, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition, add: bool
    ) -> None:
        if error != ErrorCode.NONE:
            self._log.info(
                "transaction_verification_failed",
                partition=str(tp),
                transactional_id=transactional_id,
                producer_id=producer_id,
                producer_epoch=epoch,
                error=error.name,
                add_partitions=add,
            )

    async def _verify_remotely(
        self, node_id: int, transactional_id: str, producer_id: int, epoch: int, tp: TopicPartition, add: bool
    ) -> ErrorCode:
        address = self.manager.leader_address(node_id)
        if address is None:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        request = broker_pb2.VerifyTxnPartitionsRequest(
            transactional_id=transactional_id, producer_id=producer_id, producer_epoch=epoch, add_partitions=add
        )
        request.topics.add(name=tp.topic, partition_indexes=[tp.partition])
        try:
            response = await broker_pb2_grpc.BrokerStub(self._channels.get(address)).VerifyTxnPartitions(
                request, timeout=CALL_TIMEOUT_S
            )
        except grpc.RpcError:
            self._channels.retire(address)
            return ErrorCode.NETWORK_EXCEPTION
        for topic in response.topics:
            for result in topic.partitions:
                if topic.name == tp.topic and result.partition_index == tp.partition:
                    return ErrorCode.of(result.error_code)
        return ErrorCode.UNKNOWN_SERVER_ERROR
