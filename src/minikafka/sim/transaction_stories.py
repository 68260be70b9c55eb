"""Stories of a transaction's request delayed on the network (the steps of `scenario hanging-transaction` and
`scenario delayed-end-txn`), spoken by the scenarios' own hand-made transactional producer over the brokers' Kafka
listeners."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from minikafka.client.consumer import READ_COMMITTED
from minikafka.client.kafka_wire_client import KafkaWireClient
from minikafka.client.transactions_command import find_hanging
from minikafka.common.errors import ErrorCode
from minikafka.deploy.scenario.library import hanging_transaction
from minikafka.deploy.scenario.transactions import WireTransactionalProducer
from minikafka.sim.clients import ClientMix, PlainConsumer
from minikafka.sim.cluster import BROKER_IDS, broker_address
from minikafka.sim.story_steps import Story, guard_switch, in_client, isr_is, observe, produce, wait
from minikafka.sim.world import TOPIC, TopicSpec, World

LEADER = 1
READER = "consumer-0"
READ_WITHIN_S = 20.0  # how long the read_committed consumer gets to read every acknowledged write
STATE_POLL_S = 0.2
# The world's Kafka listeners and transaction coordinators (its transactional topic stays unused).
TRANSACTIONAL = ClientMix(producers=(), transactional=1)


def wire_producer(w: World, transactional_id: str) -> WireTransactionalProducer:
    """The scenarios' transactional producer, speaking to the leader's Kafka listener."""
    client = KafkaWireClient([w.kafka_bootstrap()[BROKER_IDS.index(LEADER)]])
    return WireTransactionalProducer(client, transactional_id, TOPIC)


async def wait_state(producer: WireTransactionalProducer, state: str) -> str:
    """Poll DescribeTransactions until the coordinator has the transaction in `state` (the caller's deadline)."""
    while (found := await producer.state()) != state:
        await asyncio.sleep(STATE_POLL_S)
    return found


async def read_committed_reads_every_write(w: World, values: list[bytes]) -> None:
    """A read_committed consumer reads the partition from the start; the world's client invariants check what it
    reads (every acks=all acknowledged write read at its offset: analyze's NoCommittedRecordLost)."""
    for value in values:
        w.clients.sending(value)  # what it may read: ReadNeverWritten otherwise
    for record in w.invariants.acknowledged.get(0, []):
        w.clients.sending(record.value)
        w.clients.acknowledged(-1, record.partition, record.offset, record.value)
    bootstrap = [broker_address(b) for b in BROKER_IDS]
    reading = w._in_client(PlainConsumer(READER, bootstrap, TOPIC, w.clients, READ_COMMITTED).run())
    await w.run_until(lambda: not w.clients.unread(READER), READ_WITHIN_S)
    reading.cancel()
    observe(w, "unread_by_read_committed", len(w.clients.unread(READER)))
    w.clients.check_final([READER], None)
    while w.clients.violations:
        w.violated(w.clients.violations.pop(0))


# ---- transaction.partition.verification.enable: a produce delayed past its transaction's abort ----


@dataclass(frozen=True)
class Hanging:
    first: str  # the transaction's first produce
    aborted: str  # its EndTxn(abort)
    late: str  # the held produce, sent after the abort completed


async def _abort_then_send_late(producer: WireTransactionalProducer) -> Hanging:
    await producer.init()
    added = await producer.add_partition()
    first = await producer.produce(producer.batch(b"payment-1")) if added is ErrorCode.NONE else added
    held = producer.batch(b"payment-2")  # built now, sent after the abort: held on the network
    aborted = await producer.end(commit=False)
    await wait_state(producer, "CompleteAbort")
    late = await producer.produce(held)
    return Hanging(first.name, aborted.name, late.name)


async def _hanging_transaction(w: World) -> None:
    """A transactional producer writes to the partition, a second produce of the transaction is held; the producer
    aborts, the coordinator writes the ABORT marker, and only then the held produce arrives; plain writes follow.
    Verified, the leader asks the coordinator and refuses it INVALID_TXN_STATE. Unverified, it opens a transaction
    no coordinator knows of: the last stable offset stops there, and read_committed consumers never see the writes
    after it."""
    await wait(w, "every replica joins the ISR", lambda: isr_is(w, {1, 2, 3}))
    producer = wire_producer(w, hanging_transaction.TXN)
    try:
        outcome = await in_client(
            w, "the transaction, its abort, then the held produce", _abort_then_send_late(producer)
        )
        observe(w, "transaction", {"first": outcome.first, "abort": outcome.aborted, "late_produce": outcome.late})
        observe(w, "acknowledged_after", await produce(w, 50, "plain"))
        high_watermark, stable = await in_client(
            w, "ListOffsets, read_uncommitted and read_committed", producer.offsets()
        )
        observe(w, "high_watermark_and_lso", [high_watermark, stable])
        hanging = await in_client(w, "transactions --find-hanging", find_hanging(producer.client))
        observe(w, "hanging", [f"{h.topic}-{h.partition} from offset {h.current_txn_start_offset}" for h in hanging])
    finally:
        await in_client(w, "the producer's connections closed", producer.client.close())
    await read_committed_reads_every_write(w, [b"payment-1", b"payment-2"])


HANGING_TRANSACTION = Story(
    hanging_transaction.NAME,
    hanging_transaction.TITLE,
    guard_switch(hanging_transaction.GUARD),
    _hanging_transaction,
    TopicSpec(1, ((LEADER, 2, 3),), {"min.insync.replicas": "2"}),
    settings=hanging_transaction.TOPOLOGY.settings,
    clients=TRANSACTIONAL,
)
