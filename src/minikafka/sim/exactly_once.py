"""The simulated world's exactly-once pipeline (consume-transform-produce): workers in the consumer group `sim-eos`
read the world's topic, and for each poll write one output record per input record to the topic `sim-eos` (same
partition) in a transaction that also commits the consumed offsets (the shipped `TransactionalSession`'s
`send_offsets_to_transaction`: AddOffsetsToTxn, TxnOffsetCommit naming the member and generation), as Kafka Streams'
exactly-once does with one producer per thread (KIP-447). A worker reads the committed offsets stable
(OffsetFetch require_stable) when it joins and after every abort, and goes back to them.

At points its own seeded source draws, a transaction is aborted (1 in 10), or the worker crashes mid-transaction
(1 in 30): half its batches and no EndTxn, or every batch, the offsets and an EndTxn(commit) whose answer is never
read; or it stalls (1 in 40) after its batches, heartbeating no more for longer than its session timeout, and wakes
a zombie: the group has given its partitions to another member, and its TxnOffsetCommit must be refused. The
crashed process sends no LeaveGroup (the coordinator waits out its session); its next incarnation, a new member with
the same transactional id, fences the old producer with InitProducerId. A read_committed reader of the output hands
what it reads to `ExactlyOnceInvariants`."""

from __future__ import annotations

import asyncio
import random

import structlog

from minikafka.client.consumer import EARLIEST, READ_COMMITTED, Consumer, ConsumerConfig, ConsumerRecord
from minikafka.client.consumer_protocol_member import ConsumerProtocolMember
from minikafka.client.group_consume import BackgroundHeartbeat
from minikafka.client.group_member import GroupMember, GroupTimeouts, TopicPartition
from minikafka.client.kafka_wire_client import KafkaWireClient
from minikafka.client.transactional_session import ConsumerGroupMetadata, TransactionalSession
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy.transactional_workload import FORGET_ON_MOVED, RETRY_DEADLINE_S, UNANSWERED_WAIT_S
from minikafka.sim.clients import assign_every_partition, polls
from minikafka.sim.exactly_once_invariants import ExactlyOnceInvariants, output_value

EOS_GROUP = "sim-eos"
EOS_TOPIC = "sim-eos"
ABORT_PROBABILITY = 0.1
CRASH_PROBABILITY = 1 / 30
STALL_PROBABILITY = 1 / 40
STALL_S = 8.0  # past the group's 6 s session timeout
DOWN_S = (0.5, 2.0)  # a crashed worker's next incarnation starts this long after
RETRY_S = 0.5
# The member is no longer the one the generation knows: its transaction is aborted and it rejoins.
FENCED_MEMBER = frozenset(
    {
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_INSTANCE_ID,
        ErrorCode.REBALANCE_IN_PROGRESS,
    }
)


class Crashed(Exception):
    """The worker's process died mid-transaction."""


class EosSession(TransactionalSession):
    async def end_unanswered(self) -> None:
        """EndTxn(commit) sent, its answer never read: the process is gone."""
        sending = asyncio.ensure_future(self._end(True, self.protocol.end_txn_version))
        await asyncio.wait([sending], timeout=UNANSWERED_WAIT_S)
        sending.cancel()
        sending.add_done_callback(lambda done: done.cancelled() or done.exception())


class EosWorker:
    """One incarnation of a pipeline process: a classic group member heartbeating from its own task, a consumer of
    the input, a transactional session writing the output."""

    def __init__(
        self,
        name: str,
        transactional_id: str,
        bootstrap: list[str],
        kafka_bootstrap: list[str],
        input_topic: str,
        partitions: list[int],
        checks: ExactlyOnceInvariants,
        rng: random.Random,
        group_protocol: str = "classic",
    ) -> None:
        self.name, self.input_topic, self.checks, self.rng = name, input_topic, checks, rng
        self.consumer = Consumer(bootstrap, ConsumerConfig(fetch_max_wait_ms=200))
        self.group_client = KafkaWireClient(kafka_bootstrap)
        self.member: GroupMember
        if group_protocol == "consumer":
            self.member = ConsumerProtocolMember(self.group_client, EOS_GROUP, [input_topic], GroupTimeouts())
        else:
            self.member = GroupMember(self.group_client, EOS_GROUP, [input_topic], self._counts, GroupTimeouts())
        self.heartbeat = BackgroundHeartbeat(self.member)
        self.session = EosSession(
            KafkaWireClient(kafka_bootstrap), transactional_id, EOS_TOPIC, partitions, RETRY_DEADLINE_S,
            FORGET_ON_MOVED,
        )  # fmt: skip
        self.assignment: list[TopicPartition] = []
        self.log = structlog.get_logger()

    async def _counts(self, topics: list[str]) -> dict[str, int]:
        return {t: len(await self.consumer.metadata.require_topic(t)) for t in topics}

    async def run(self) -> None:
        """Transactions until cancelled; raises Crashed when the process dies on purpose."""
        try:
            await self._init()
            self.heartbeat.start()
            await self._rejoin()
            while True:
                if self.heartbeat.rejoin.is_set():
                    self.heartbeat.rejoin.clear()
                    await self._rejoin()
                try:
                    records = await self.consumer.poll()
                except KafkaError:
                    await asyncio.sleep(RETRY_S)
                    continue
                if records:
                    await self._transaction(records)
        finally:
            await self.heartbeat.stop()
            await self.session.client.close()
            await self.group_client.close()
            await self.consumer.close()

    async def _init(self) -> None:
        """InitProducerId until it is answered: fences the previous incarnation, whose open transaction is aborted."""
        while True:
            try:
                await self.session.init()
                return
            except KafkaError:
                await asyncio.sleep(RETRY_S)

    async def _rejoin(self) -> None:
        while True:
            try:
                self.assignment = await self.member.join()
                await self._rewind()
                self.log.info(
                    "sim_eos_joined",
                    worker=self.name,
                    generation=self.member.generation,
                    partitions=sorted(p for _, p in self.assignment),
                )
                return
            except KafkaError:
                await asyncio.sleep(RETRY_S)

    async def _rewind(self) -> None:
        """Every assigned partition from the group's stable committed offset (a commit still on its way waited out)."""
        committed = await self.member.committed(self.assignment, require_stable=True)
        self.checks.offsets_committed({p: o for (_, p), o in committed.items()})
        self.consumer.positions.clear()
        self.consumer.fetch_states.clear()
        for topic, partition in self.assignment:
            await self.consumer.assign(topic, [partition], committed.get((topic, partition), EARLIEST))

    async def _transaction(self, records: list[ConsumerRecord]) -> None:
        by_partition: dict[int, list[ConsumerRecord]] = {}
        for record in records:
            by_partition.setdefault(record.partition, []).append(record)
        offsets = {(self.input_topic, p): batch[-1].offset + 1 for p, batch in by_partition.items()}
        commit = self.rng.random() >= ABORT_PROBABILITY
        crash = self.rng.random() < CRASH_PROBABILITY
        unanswered = self.rng.random() < 0.5  # a crash after sending EndTxn(commit), not before it
        stall = self.rng.random() < STALL_PROBABILITY
        group = ConsumerGroupMetadata(EOS_GROUP, self.member.generation, self.member.member_id)
        refusal: ErrorCode | None = None
        try:
            await self.session.add_partitions()
            partitions = sorted(by_partition)
            for index, partition in enumerate(partitions):
                if crash and not unanswered and index >= max(1, len(partitions) // 2):
                    break
                values = [output_value(partition, r.offset, r.value or b"") for r in by_partition[partition]]
                await self.session.produce(partition, values)
            if stall and not crash:
                await self._stall()
            if not crash or unanswered:
                await self.session.send_offsets_to_transaction(offsets, group)
        except KafkaError as error:
            refusal = error.code
        if crash:
            if unanswered and refusal is None and commit:
                await self.session.end_unanswered()
            raise Crashed(f"{self.name} crashed mid-transaction")
        await self._end(commit and refusal is None, refusal, len(records), offsets)

    async def _stall(self) -> None:
        """No heartbeat for longer than the session timeout (a long GC pause, a stopped process): the coordinator
        removes the member and gives its partitions to another."""
        self.log.info("sim_eos_stalled", worker=self.name, generation=self.member.generation, seconds=STALL_S)
        await self.heartbeat.stop()
        await asyncio.sleep(STALL_S)
        self.heartbeat = BackgroundHeartbeat(self.member)
        self.heartbeat.start()

    async def _end(
        self, commit: bool, refusal: ErrorCode | None, processed: int, offsets: dict[TopicPartition, int]
    ) -> None:
        acknowledged = False
        try:
            await self.session.end(commit)
            acknowledged = commit
        except KafkaError:
            await self._init()  # the outcome unknown or the producer fenced: the coordinator ends what was open
        counts = self.checks.counts
        if acknowledged:
            counts.committed += 1
            counts.records += processed
            self.checks.offsets_committed({p: o for (_, p), o in offsets.items()})
            return
        counts.aborted += 1
        if refusal in FENCED_MEMBER:
            counts.fenced += 1
            self.heartbeat.rejoin.set()
        reason = refusal.name if refusal is not None else ("on purpose" if not commit else "EndTxn failed")
        self.log.info("sim_eos_aborted", worker=self.name, generation=self.member.generation, reason=reason)
        while True:
            try:
                await self._rewind()
                return
            except KafkaError:
                await asyncio.sleep(RETRY_S)


async def exactly_once_worker(
    number: int,
    bootstrap: list[str],
    kafka_bootstrap: list[str],
    input_topic: str,
    partitions: list[int],
    checks: ExactlyOnceInvariants,
    rng: random.Random,
    group_protocol: str = "classic",
) -> None:
    """Worker `eos-<number>` until cancelled, a new incarnation (a new member, the same transactional id) after each
    crash."""
    incarnation = 0
    while True:
        incarnation += 1
        name = f"eos-{number}.{incarnation}"
        worker = EosWorker(
            name, f"sim-eos-{number}", bootstrap, kafka_bootstrap, input_topic, partitions, checks, rng, group_protocol
        )
        try:
            await worker.run()
        except Crashed:
            checks.counts.crashes += 1
            structlog.get_logger().info("sim_eos_crashed", worker=name)
            await asyncio.sleep(rng.uniform(*DOWN_S))


async def output_reader(bootstrap: list[str], checks: ExactlyOnceInvariants) -> None:
    """A read_committed consumer of the output from its start, until cancelled."""
    consumer = Consumer(bootstrap, ConsumerConfig(fetch_max_wait_ms=200, isolation_level=READ_COMMITTED))
    await assign_every_partition(consumer, EOS_TOPIC)
    try:
        async for records in polls(consumer):
            read = [(r.partition, r.offset, r.value or b"") for r in records]
            checks.output_polled(read, {p: o for (_topic, p), o in consumer.positions.items()})
    finally:
        await consumer.close()


async def committed_offsets(kafka_bootstrap: list[str], input_topic: str, partitions: list[int]) -> dict[int, int]:
    """The group's stable committed offsets of the input, as an OffsetFetch(require_stable) answers them."""
    client = KafkaWireClient(kafka_bootstrap)

    async def no_counts(_topics: list[str]) -> dict[str, int]:
        return {}

    member = GroupMember(client, EOS_GROUP, [input_topic], no_counts, GroupTimeouts())
    try:
        while True:
            try:
                found = await member.committed([(input_topic, p) for p in partitions], require_stable=True)
                return {p: o for (_, p), o in found.items()}
            except KafkaError:
                await asyncio.sleep(RETRY_S)
    finally:
        await client.close()
