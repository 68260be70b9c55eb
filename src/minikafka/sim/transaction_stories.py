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
from minikafka.deploy.scenario.library import delayed_end_txn, hanging_transaction
from minikafka.deploy.scenario.transactions import WireTransactionalProducer
from minikafka.sim.clients import ClientMix, PlainConsumer
from minikafka.sim.cluster import BROKER_IDS, broker_address
from minikafka.sim.story_steps import in_client, isr_is, observe, produce, scenario_story, wait
from minikafka.sim.transaction_invariants import TransactionInvariants, TxnKey
from minikafka.sim.transactions import TXN_TOPIC, ReadCommittedConsumer
from minikafka.sim.world import TOPIC, TopicSpec, World

LEADER = 1
READER = "consumer-0"
READ_WITHIN_S = 20.0  # how long the read_committed consumer gets to read every acknowledged write
STATE_POLL_S = 0.2
# The world's Kafka listeners and transaction coordinators, and its transactional topic (delayed-end-txn's).
TRANSACTIONAL = ClientMix(producers=(), transactional=1)


def wire_producer(w: World, transactional_id: str, topic: str = TOPIC) -> WireTransactionalProducer:
    """The scenarios' transactional producer, speaking to the leader's Kafka listener."""
    client = KafkaWireClient([w.kafka_bootstrap()[BROKER_IDS.index(LEADER)]])
    return WireTransactionalProducer(client, transactional_id, topic)


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


HANGING_TRANSACTION = scenario_story(
    hanging_transaction,
    _hanging_transaction,
    TopicSpec(1, ((LEADER, 2, 3),), {"min.insync.replicas": "2"}),
    clients=TRANSACTIONAL,
)


# ---- transaction.version 2: an EndTxn delayed past its retry ----


@dataclass(frozen=True)
class Delayed:
    version: int  # the finalized transaction.version the producer read
    retried: str  # transaction 1's EndTxn(commit), sent again
    epochs: tuple[int, int]  # the producer epoch before and after it
    late: str  # the held EndTxn(commit) of transaction 1, arriving during transaction 2
    aborted: str  # transaction 2's EndTxn(abort)
    state: str  # the coordinator's at the end


async def _transaction(producer: WireTransactionalProducer, checks: TransactionInvariants, number: int) -> str:
    """Transaction `number` begun: one record, its value order-<number>, told to the invariants."""
    key, value = TxnKey(delayed_end_txn.TXN, number), f"order-{number}".encode()
    checks.begin(key, {0: [value]}, asyncio.get_running_loop().time())
    added = await producer.add_partition()
    written = await producer.produce(producer.batch(value)) if added is ErrorCode.NONE else added
    if written is ErrorCode.NONE:
        checks.batch_acknowledged(key, 0, producer.base_offset)
    return written.name


async def _end(producer: WireTransactionalProducer, checks: TransactionInvariants, number: int, commit: bool) -> str:
    key = TxnKey(delayed_end_txn.TXN, number)
    checks.ending(key, commit)
    ended = await producer.end(commit)
    checks.ended(key, commit and ended is ErrorCode.NONE)
    return ended.name


async def _late_end_txn(producer: WireTransactionalProducer, checks: TransactionInvariants) -> Delayed:
    version = await producer.transaction_version()
    await producer.init()
    await _transaction(producer, checks, 1)
    first_epoch = producer.epoch
    held = producer.end_request(commit=True)  # built now, sent during transaction 2: held on the network
    retried = await _end(producer, checks, 1, commit=True)
    epochs = (first_epoch, producer.epoch)
    await wait_state(producer, "CompleteCommit")
    await _transaction(producer, checks, 2)
    late = await producer.send_end(held)
    aborted = await _end(producer, checks, 2, commit=False)
    state = await wait_state(producer, "CompleteAbort" if aborted == ErrorCode.NONE.name else "CompleteCommit")
    return Delayed(version, retried, epochs, late.name, aborted, state)


async def _delayed_end_txn(w: World) -> None:
    """Transaction 1's EndTxn(commit) is held; the producer retries it, it commits, and transaction 2 begins. Then
    the held EndTxn arrives, and the producer aborts transaction 2. With transaction version 2 every EndTxn bumps
    the producer epoch: the late one is fenced PRODUCER_FENCED. Without, it carries transaction 2's epoch and commits
    it: a read_committed consumer reads a record its producer aborted."""
    await wait(w, "the transactional topic has a leader", lambda: bool(w.txn_leaders()))
    producer = wire_producer(w, delayed_end_txn.TXN, TXN_TOPIC)
    try:
        found = await in_client(
            w, "transaction 1, its held EndTxn, transaction 2", _late_end_txn(producer, w.transactions)
        )
    finally:
        await in_client(w, "the producer's connections closed", producer.client.close())
    observe(w, "transaction_version", found.version)
    observe(w, "retried_commit", {"answer": found.retried, "epochs": list(found.epochs)})
    observe(w, "late_end_txn", found.late)
    observe(w, "abort_of_transaction_2", {"answer": found.aborted, "coordinator": found.state})
    reading = w._in_client(ReadCommittedConsumer(READER, [broker_address(b) for b in BROKER_IDS], w.transactions).run())
    caught_up = await w.run_until(lambda: not w.transactions.behind(READER), READ_WITHIN_S)
    reading.cancel()
    observe(w, "read_committed", sorted(v.decode() for t in w.transactions.read.get(READER, {}).values() for v in t))
    observe(w, "reader_caught_up", caught_up)
    w.transactions.check_final([READER])
    while w.transactions.violations:
        w.violated(w.transactions.violations.pop(0))


DELAYED_END_TXN = scenario_story(
    delayed_end_txn,
    _delayed_end_txn,
    TopicSpec(1, ((LEADER, 2, 3),), {"min.insync.replicas": "2"}),
    clients=TRANSACTIONAL,
)
