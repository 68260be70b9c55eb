"""The simulated world's transactional clients: transactional producers (chaos's `ChaosTransactionalProducer`, the
shipped `TransactionalSession` over the brokers' Kafka listeners: FindCoordinator, InitProducerId,
AddPartitionsToTxn, one transactional batch to each partition, EndTxn) writing transactions over every partition of
their own topic, each committed or aborted, or cut short by a crash, at points the seed draws; and read_committed
consumers of that topic (the shipped `Consumer` with isolation.level read_committed).

A producer that crashes leaves its transaction half written (no EndTxn), or sends EndTxn(commit) and never reads the
answer; its next session's InitProducerId fences the old one and the coordinator aborts what was still open, as in
`chaos --transactional-producers`. A transaction whose batch or EndTxn failed is ended by an abort, or by the next
InitProducerId. What each one sees goes to `TransactionInvariants`."""

from __future__ import annotations

import asyncio
import random

from minikafka.client.consumer import READ_COMMITTED, Consumer, ConsumerConfig
from minikafka.client.kafka_wire_client import KafkaWireClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy.transactional_workload import ChaosTransactionalProducer, Outcome
from minikafka.sim.clients import assign_every_partition, polls
from minikafka.sim.transaction_invariants import TransactionInvariants, TxnKey

TXN_TOPIC = "sim-txn"
RECORDS_PER_PARTITION = 2  # records of one transaction in each partition
ABORT_PROBABILITY = 0.25  # a transaction the producer aborts on purpose
CRASH_PROBABILITY = 0.1  # a transaction cut short by the producer's crash
RETRY_S = 0.5  # a producer's pause after an InitProducerId that failed (the coordinator away)
FINAL_INIT_S = 30.0  # at the end, how long a producer that crashed tries to fence its last transaction
TRANSACTION_INTERVAL_S = 0.2  # between one transaction's end and the next one's start


class SimTransactionalProducer(ChaosTransactionalProducer):
    """Chaos's transactional producer, telling the invariants each batch's offset as it is acknowledged and each
    EndTxn as it is sent (before any coordinator can act on it)."""

    def __init__(
        self, client: KafkaWireClient, name: str, partitions: list[int], checks: TransactionInvariants
    ) -> None:
        super().__init__(client, f"sim-{name}", TXN_TOPIC, partitions)
        self.checks = checks
        self.key = TxnKey(name, -1)

    async def _produce_into(self, outcome: Outcome, partition: int, batch_values: list[bytes]) -> None:
        await super()._produce_into(outcome, partition, batch_values)
        self.checks.batch_acknowledged(self.key, partition, outcome.base_offsets[partition])

    async def _end(self, commit: bool, version: int) -> ErrorCode:
        self.checks.ending(self.key, commit)
        return await super()._end(commit, version)


async def transactional_producer(
    kafka_bootstrap: list[str],
    name: str,
    partitions: list[int],
    stop: asyncio.Event,
    checks: TransactionInvariants,
    rng: random.Random,
) -> None:
    """Transactions until `stop` (the one under way finished), then, after a crash, a last InitProducerId: the
    coordinator aborts the transaction the crash left open, and the final read is not held up by it."""
    loop = asyncio.get_running_loop()
    number, ready = 0, False
    session = SimTransactionalProducer(KafkaWireClient(kafka_bootstrap), name, partitions, checks)
    try:
        while not stop.is_set():
            if not ready:
                ready = await _initialized(session, checks)
                continue
            commit = rng.random() >= ABORT_PROBABILITY
            crash = rng.random() < CRASH_PROBABILITY
            unanswered = rng.random() < 0.5  # a crash after sending EndTxn(commit), not before it
            values = {p: [f"{name}-{number:06d}-{p}-{i}".encode() for i in range(RECORDS_PER_PARTITION)]
                      for p in partitions}  # fmt: skip
            session.key = TxnKey(name, number)
            checks.begin(session.key, values, loop.time())
            if crash:
                outcome = await session.crash(values, commit, unanswered_commit=unanswered)
            else:
                outcome = await session.transaction(values, commit)
            checks.ended(session.key, outcome.end == "commit" and outcome.end_acknowledged)
            if crash:
                await session.client.close()
                session = SimTransactionalProducer(KafkaWireClient(kafka_bootstrap), name, partitions, checks)
                ready = False  # its InitProducerId fences the old session
            elif outcome.failed:
                ready = False
            number += 1
            await asyncio.sleep(TRANSACTION_INTERVAL_S)
        deadline = loop.time() + FINAL_INIT_S
        while not ready and loop.time() < deadline:
            ready = await _initialized(session, checks)
    finally:
        await session.client.close()


async def _initialized(session: SimTransactionalProducer, checks: TransactionInvariants) -> bool:
    """InitProducerId: from its first attempt the coordinator may abort what the producer left open."""
    checks.fencing(session.key.producer)
    try:
        await session.init()
        return True
    except KafkaError:
        await asyncio.sleep(RETRY_S)  # the coordinator is still away: ask again
        return False


class ReadCommittedConsumer:
    """A read_committed consumer assigned every partition of the transactional topic from the earliest offset; after
    each poll its records and positions go to the invariants together (a position moved past records not returned
    says they were not visible)."""

    def __init__(self, name: str, bootstrap: list[str], checks: TransactionInvariants) -> None:
        self.name = name
        self.checks = checks
        config = ConsumerConfig(fetch_max_wait_ms=200, isolation_level=READ_COMMITTED)
        self.consumer = Consumer(bootstrap, config)

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        await assign_every_partition(self.consumer, TXN_TOPIC)
        try:
            async for records in polls(self.consumer):
                read = [(r.partition, r.offset, r.value or b"") for r in records]
                positions = {p: o for (_topic, p), o in self.consumer.positions.items()}
                self.checks.polled(self.name, read, positions, loop.time())
        finally:
            await self.consumer.close()
