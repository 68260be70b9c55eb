"""The simulated world's clients, each minikafka's own shipped client run as the world's client node: producers
(`Producer`, acks all/1/0, idempotent or not), plain consumers reading every partition from the start (`Consumer`)
and the members of one consumer group (`GroupConsumer` over a classic `GroupMember` or, with `group.protocol`
consumer, a KIP-848 `ConsumerProtocolMember`, through the brokers' Kafka listeners). What each one sees goes to
`ClientInvariants`."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import structlog

from minikafka.client.consumer import (
    EARLIEST,
    READ_COMMITTED,
    READ_UNCOMMITTED,
    Consumer,
    ConsumerConfig,
    ConsumerRecord,
)
from minikafka.client.consumer_protocol_member import ConsumerProtocolMember
from minikafka.client.group_consume import GroupConsumer
from minikafka.client.group_member import GroupMember, GroupTimeouts, TopicPartition
from minikafka.client.kafka_wire_client import KafkaWireClient
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig, RecordMetadata
from minikafka.common.errors import KafkaError
from minikafka.deploy.compacted_workload import record_key
from minikafka.sim.client_invariants import ACKS_NAMES, ClientInvariants, Read
from minikafka.sim.invariants import KEY_SEPARATOR, tombstone_of

GROUP = "sim-readers"
KAFKA_PORT = 9094  # each broker's Kafka listener (PLAINTEXT), beside its gRPC one
RETRY_S = 0.5  # a client's pause after an error it cannot retry itself
KILL_EVERY_S = (4.0, 12.0)  # chaos's group workload: a member killed after a pause in this range
DOWN_S = (0.5, 2.0)  # and restarted this long after
TOMBSTONE_EVERY = 10  # a compacted run's producers delete a key every this many writes
GROUP_PROTOCOLS = ("classic", "consumer")  # the consumers' group.protocol: Kafka's default is classic


@dataclass(frozen=True)
class ProducerSpec:
    acks: int = -1  # 0, 1 or -1 (all)
    idempotence: bool | None = None  # enable.idempotence; None: Kafka's default (on with acks=all)

    @property
    def label(self) -> str:
        idempotent = ProducerConfig(acks=self.acks, enable_idempotence=self.idempotence).idempotent
        return f"acks={ACKS_NAMES[self.acks]}{' idempotent' if idempotent else ''}"


@dataclass(frozen=True)
class ClientMix:
    """The world's clients: today's default is one idempotent acks=all producer and no consumers."""

    producers: tuple[ProducerSpec, ...] = (ProducerSpec(),)
    consumers: int = 0  # plain consumers, each reading every partition from the start
    group_members: int = 0  # members of one consumer group, committing as they go
    group_protocol: str = "classic"  # the members' group.protocol: classic, or consumer (KIP-848)
    member_kills: bool = True  # the members are killed and restarted at seeded times while the faults run
    seeded: bool = False  # the run's seed draws the mix instead (`seeded_mix`)
    transactional: int = 0  # transactional producers, each over every partition of the transactional topic
    isolation_level: int = READ_UNCOMMITTED  # the plain consumers'; read_committed ones also read transactions
    exactly_once: int = 0  # consume-transform-produce workers (`exactly_once.py`) over the world's topic
    compacted_keys: int = 0  # the world's topic compacted, the producers overwriting this many keys in turn

    @property
    def kafka_listeners(self) -> bool:
        return self.group_members > 0 or self.transactional > 0 or self.exactly_once > 0

    @property
    def transaction_coordinators(self) -> bool:
        return self.transactional > 0 or self.exactly_once > 0


# The plain consumer reads read_committed: on the producers' topic (no transactions) it reads what a read_uncommitted
# one does, and it also judges the transactional producer's topic.
MIXED = ClientMix(
    (ProducerSpec(-1, True), ProducerSpec(-1, False), ProducerSpec(1), ProducerSpec(0)),
    consumers=1,
    group_members=3,
    transactional=1,
    isolation_level=READ_COMMITTED,
    exactly_once=1,
)
MIXED_HELP = (
    "producers acks=all idempotent and plain, acks=1 and acks=0; a read_committed plain consumer; a group of 3; a "
    "transactional producer; an exactly-once pipeline of 1"
)
SEEDED_HELP = (
    "the seed draws them: an idempotent acks=all producer and one to three of acks=all plain, acks=1 and acks=0; "
    "no or one plain consumer; a group of 2 or 3; with a consumer, maybe a transactional producer (the consumer then "
    "read_committed); maybe an exactly-once pipeline of 1 or 2"
)


def seeded_mix(seed: int) -> ClientMix:
    """A small mix of clients drawn by the seed (from a source of its own: the network's draws stay the same)."""
    rng = random.Random(seed * 7919 + 3)
    others = [ProducerSpec(-1, False), ProducerSpec(1), ProducerSpec(0)]
    chosen = sorted(rng.sample(range(len(others)), rng.randint(1, len(others))))
    producers = (ProducerSpec(-1, True), *(others[i] for i in chosen))
    consumers, group_members = rng.randint(0, 1), rng.randint(2, 3)
    # Drawn after the rest, so the mixes drawn before these clients existed stay as they were.
    transactional = rng.randint(0, 1) if consumers else 0
    return ClientMix(
        producers,
        consumers=consumers,
        group_members=group_members,
        transactional=transactional,
        isolation_level=READ_COMMITTED if transactional else READ_UNCOMMITTED,
        exactly_once=rng.choice((0, 1, 2)),
    )


def value_prefix(index: int) -> str:
    return "r" if index == 0 else f"p{index}-r"  # the first producer's values as the world always wrote them


async def produce(
    bootstrap: list[str],
    topic: str,
    partitions: int,
    index: int,
    spec: ProducerSpec,
    stop: asyncio.Event,
    checks: ClientInvariants,
    on_acknowledged: Any,
    interval_s: float,
    key_count: int = 0,
) -> None:
    """Unique values to every partition in turn, until `stop`; every outcome handed to the invariants. With
    `key_count`, keyed records overwriting that many keys, each value led by its key (`compacted_key`)."""
    config = ProducerConfig(acks=spec.acks, linger_ms=2, enable_idempotence=spec.idempotence)
    producer = Producer(bootstrap, config)
    idempotent = config.idempotent
    pending: set[asyncio.Future[RecordMetadata]] = set()
    sequence = 0
    prefix = value_prefix(index)
    while not stop.is_set():
        value = f"{prefix}{sequence}".encode()
        key = record_key(sequence, key_count, index * 7) if key_count else None
        sent: bytes | None = value
        if key is not None:
            # Every tenth write of a compacted run deletes its key (a tombstone, read back as `key=`).
            sent = None if sequence % TOMBSTONE_EVERY == TOMBSTONE_EVERY - 1 else key + KEY_SEPARATOR + value
            value = tombstone_of(key) if sent is None else sent
        sent_at = asyncio.get_running_loop().time()
        checks.sending(value, idempotent, sent_at)
        try:
            future = await producer.send(topic, sent, key, partition=sequence % partitions)
        except KafkaError:
            await asyncio.sleep(RETRY_S)
            continue
        outcome = functools.partial(_outcome, checks, spec.acks, value, on_acknowledged, sent_at)
        future.add_done_callback(outcome)
        pending.add(future)
        future.add_done_callback(pending.discard)
        sequence += 1
        await asyncio.sleep(interval_s)
    await asyncio.wait(pending, timeout=30) if pending else None
    await producer.close()


def _outcome(
    checks: ClientInvariants,
    acks: int,
    value: bytes,
    on_acknowledged: Any,
    sent_at: float,
    done: asyncio.Future[RecordMetadata],
) -> None:
    if done.cancelled():
        return
    error = done.exception()
    if error is not None:
        checks.failed(value, isinstance(error, DeliveryFailed) and error.definite)
        return
    meta = done.result()
    checks.acknowledged(acks, meta.partition, meta.offset, value, sent_at)
    if acks == -1 and meta.offset is not None:
        on_acknowledged(meta.partition, meta.offset, value)


class PlainConsumer:
    """A consumer assigned every partition from the earliest offset, polling until cancelled."""

    def __init__(
        self,
        name: str,
        bootstrap: list[str],
        topic: str,
        checks: ClientInvariants,
        isolation_level: int,
        start_after_s: float = 0.0,
    ) -> None:
        self.name = name
        self.topic = topic
        self.checks = checks
        self.start_after_s = start_after_s  # a late reader of a compacted topic finds cleaned logs
        self.consumer = Consumer(bootstrap, ConsumerConfig(fetch_max_wait_ms=200, isolation_level=isolation_level))

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        if self.start_after_s:
            await asyncio.sleep(self.start_after_s)  # the simulated run's schedule, not a synchronisation
        await assign_every_partition(self.consumer, self.topic)
        try:
            async for records in polls(self.consumer):
                for record in records:
                    self.checks.consumed(_read(self.name, record, loop.time()))
        finally:
            await self.consumer.close()


async def assign_every_partition(consumer: Consumer, topic: str) -> None:
    """Every partition of `topic` from the earliest offset, asked again while the cluster cannot answer."""
    while True:
        try:
            await consumer.assign(topic, None, EARLIEST)
            return
        except KafkaError:
            await asyncio.sleep(RETRY_S)


async def polls(consumer: Consumer) -> AsyncIterator[list[ConsumerRecord]]:
    """Each poll's records, until cancelled."""
    while True:
        try:
            records = await consumer.poll()
        except KafkaError:
            await asyncio.sleep(RETRY_S)  # e.g. OFFSET_OUT_OF_RANGE on a leader not caught up: ask again
            continue
        yield records


def _read(reader: str, record: ConsumerRecord, at_s: float, member: SimMember | None = None) -> Read:
    value = record.value or (tombstone_of(record.key) if record.value is None and record.key is not None else b"")
    if member is None:
        return Read(reader, record.partition, record.offset, value, at_s)
    return Read(reader, record.partition, record.offset, value, at_s, member.group, member.generation, member.joins)


class _Named:
    """What the world keeps of a member beside the shipped class: its name, the invariants, how often it joined."""

    def __init__(self, name: str, checks: ClientInvariants, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = name
        self.checks = checks
        self.joins = 0


class SimGroupMember(_Named, GroupMember):
    """The shipped classic member; the assignment each SyncGroup gives it goes to the invariants."""

    async def join(self) -> list[TopicPartition]:
        assignment = await super().join()
        self.joins += 1
        partitions = _assigned(self.name, self.generation, assignment)
        self.checks.assigned(self.group, self.generation, self.name, partitions)
        return assignment


class SimConsumerProtocolMember(_Named, ConsumerProtocolMember):
    """The shipped KIP-848 member. Its member epoch stands for the generation in what it reads; who holds which
    partition is judged on the coordinator's events (NoDoubleOwnership), as `analyze` judges it, since members'
    epochs differ within one group."""

    async def join(self) -> list[TopicPartition]:
        assignment = await super().join()
        self.joins += 1
        _assigned(self.name, self.generation, assignment)
        return assignment


SimMember = SimGroupMember | SimConsumerProtocolMember


def _assigned(name: str, generation: int, assignment: list[TopicPartition]) -> list[int]:
    partitions = sorted(p for _, p in assignment)
    structlog.get_logger().info("sim_member_assigned", member=name, generation=generation, partitions=partitions)
    return partitions


class SimGroupConsumer(GroupConsumer):
    """The shipped group consume loop (join, read from the committed offsets, commit every second, heartbeat,
    rejoin on a rebalance); its output goes to the invariants instead of stdout."""

    def __init__(self, name: str, checks: ClientInvariants, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.name = name
        self.checks = checks

    def write(self, records: list[ConsumerRecord], limit: int | None, consumed: int) -> int:
        loop = asyncio.get_running_loop()
        for record in records:
            assert isinstance(self.member, SimGroupMember | SimConsumerProtocolMember)
            read = _read(self.name, record, loop.time(), self.member)
            self.checks.consumed(read)
            self.written[(record.topic, record.partition)] = record.offset + 1
        return consumed + len(records)

    def announce(self, text: str) -> None:
        pass  # the generations and assignments are in the coordinator's events


async def group_member(
    name: str,
    bootstrap: list[str],
    kafka_bootstrap: list[str],
    topic: str,
    checks: ClientInvariants,
    killed: Callable[[], bool] = lambda: False,
    group_protocol: str = "classic",
) -> None:
    """One member of the world's group, until cancelled: then it leaves the group, unless `killed()` says its
    process died (it just goes silent, and the coordinator waits out its session timeout)."""
    consumer = Consumer(bootstrap, ConsumerConfig(fetch_max_wait_ms=200))
    client = KafkaWireClient(kafka_bootstrap)

    async def partition_counts(topics: list[str]) -> dict[str, int]:
        return {t: len(await consumer.metadata.require_topic(t)) for t in topics}

    member: SimMember
    if group_protocol == "consumer":
        member = SimConsumerProtocolMember(name, checks, client, GROUP, [topic], GroupTimeouts())
    else:
        member = SimGroupMember(name, checks, client, GROUP, [topic], partition_counts, GroupTimeouts())
    runner = SimGroupConsumer(name, checks, consumer, member, True, False)
    try:
        while True:
            try:
                await runner.run(timeout_ms=2**31, limit=None)
            except KafkaError:
                await asyncio.sleep(RETRY_S)  # a coordinator lookup or join that ran out of retries: again
    finally:
        if not killed():
            await member.leave()
        await client.close()
        await consumer.close()


class MemberKills:
    """As `chaos --group-consumers` does: a member killed after a seeded pause (4-12 s), restarted 0.5-2 s later
    as a new process (a new member id, resuming from the group's committed offsets)."""

    def __init__(self, rng: random.Random, start: Callable[[int], asyncio.Task[None]], members: int) -> None:
        self.rng = rng
        self.start = start
        self.tasks = [start(m) for m in range(members)]
        self.killing = False
        self.kills = 0

    async def run(self) -> None:
        try:
            while True:
                await asyncio.sleep(self.rng.uniform(*KILL_EVERY_S))
                member = self.rng.randrange(len(self.tasks))
                self.killing = True
                self.tasks[member].cancel()
                await asyncio.wait([self.tasks[member]])
                self.killing = False
                self.kills += 1
                await asyncio.sleep(self.rng.uniform(*DOWN_S))
                self.tasks[member] = self.start(member)
        finally:  # the kills end (the final read): every member runs again
            self.killing = False
            for member, task in enumerate(self.tasks):
                if task.done():
                    self.tasks[member] = self.start(member)

    def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
