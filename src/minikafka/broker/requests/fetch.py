"""Fetch, from a follower or a consumer (Kafka's KafkaApis.handleFetchRequest and ReplicaManager.fetchMessages):
the session context (KIP-227), one read of the fetch's partitions under the response's byte limit (every one, but
for a follower's incremental fetch: those changed or not settled, see fetch_session), and the long poll.

As Kafka:
- a partition named more than once counts once (the last line's fetch state, in the first line's place);
- the response holds at most `max_bytes` of records, except that the first partition with records may return its
  first batch whole past it, so a consumer behind a big batch still makes progress; the partitions after it get
  only the bytes left, and a batch that does not fit in them is not sent;
- the answer goes at once when `max_wait_ms` <= 0, when the records reach `min_bytes` (so `min_bytes` 0 never
  waits), when no partition is asked, or when a partition has an error or a diverging epoch; else it waits on the
  replica manager's change notification until one of these holds or the time is up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import structlog

from minikafka.broker.client_authorizer import Caller
from minikafka.broker.fetch_session import (
    INVALID_SESSION_ID,
    CachedPartition,
    FetchContext,
    FetchSessionCache,
    PartitionAnswer,
    PartitionFetchState,
    PartitionKey,
    SettledRead,
    TopicTargets,
    must_answer,
)
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.replica.divergence import EpochEndOffset
from minikafka.broker.replica_manager import READ_UNCOMMITTED, FetchPartitionResult, ReplicaManager
from minikafka.broker.requests.topics import TOPIC_ID_BYTES, topic_by_id_bytes, topic_key
from minikafka.common.acl import AclOperation, ResourceType
from minikafka.common.clock import monotonic_ms
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.storage.transaction_index import AbortedTxn

DEFAULT_PARTITION_MAX_BYTES = 1048576  # a line asking for 0 bytes: Kafka's max.partition.fetch.bytes default


@dataclass(slots=True)
class ForgottenPartition:
    topic_id: bytes  # 16 bytes, or b"" when named by `topic`
    topic: str
    partition: int


@dataclass(slots=True)
class FetchRequest:
    replica_id: int  # the fetching follower; -1 for a consumer
    replica_epoch: int  # the follower's broker epoch (KIP-903); -1 for a consumer
    max_wait_ms: int
    min_bytes: int
    max_bytes: int  # records in the whole response (the first batch may pass it)
    session_id: int
    session_epoch: int  # -1: a sessionless full fetch; 0: a full fetch that asks for a session
    # Each line's topic_id is 16 bytes, or b"" when the line names its `topic` instead.
    partitions: Sequence[PartitionFetchState]
    forgotten: Sequence[ForgottenPartition] = ()
    isolation_level: int = READ_UNCOMMITTED  # READ_COMMITTED: only below the last stable offset
    # Whether the consumer may READ a topic (by name); None: every topic. A topic it may not read is answered
    # TOPIC_AUTHORIZATION_FAILED and nothing of it is read.
    readable: Callable[[str], bool] | None = None

    @property
    def from_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass(slots=True)
class FetchPartitionAnswer:
    partition: int
    error: ErrorCode
    high_watermark: int
    log_start_offset: int  # -1 when the partition is not hosted here
    records: bytes  # whole batches, as the log holds them (never copied here)
    diverging: EpochEndOffset | None
    leader_id: int  # the partition's leader as this broker knows it; -1 unknown
    leader_epoch: int
    last_stable_offset: int = -1
    # read_committed: the aborted transactions the records overlap; None (Kafka's null) for read_uncommitted
    aborted_transactions: tuple[AbortedTxn, ...] | None = None


@dataclass(slots=True)
class FetchTopicAnswer:
    topic_id: bytes  # 16 bytes when asked by id or the name is known, else b""
    topic: str
    known: bool  # the metadata has the topic
    partitions: list[FetchPartitionAnswer]


@dataclass(slots=True)
class FetchAnswer:
    error: ErrorCode  # a session error; the partitions' own errors are in them
    session_id: int  # the session the fetcher continues with; 0: none
    topics: list[FetchTopicAnswer]


@dataclass
class _Read:
    """One pass over a fetch's partitions: the topics to answer, the bytes of records, whether any partition has
    an error or a diverging epoch, and what a session answered."""

    topics: list[FetchTopicAnswer] = field(default_factory=list)
    total: int = 0
    failed: bool = False
    sent: list[tuple[CachedPartition, PartitionAnswer]] = field(default_factory=list)
    # A follower's session: the partitions read, settled (nothing to read until they change) or not.
    settled: list[SettledRead] = field(default_factory=list)
    unsettled: list[PartitionKey] = field(default_factory=list)
    replicated: list[tuple[str, int, int]] = field(default_factory=list)  # a follower's (topic, partition, bytes)


def readable_by(manager: ReplicaManager, caller: Caller) -> Callable[[str], bool] | None:
    """FetchRequest.readable for a consumer: READ on the topic (None without an authorizer)."""
    if not manager.authorizer.enabled:
        return None
    return lambda topic: manager.authorizer.allowed(caller, AclOperation.READ, ResourceType.TOPIC, topic)


async def handle_fetch(manager: ReplicaManager, sessions: FetchSessionCache, request: FetchRequest) -> FetchAnswer:
    if request.from_follower:
        manager.watch_fetch_sessions(sessions)  # followers' sessions read only the partitions that changed
    # One clock read for the steps up to the first wait (each read is a system call on CPython 3.11's loop lookup).
    now = monotonic_ms()
    fetch = _session_context(manager, sessions, request, now)
    if fetch.error != ErrorCode.NONE:
        return FetchAnswer(fetch.error, INVALID_SESSION_ID, [])
    _count_settled(manager, request.replica_id, fetch.settled_until)
    deadline_ms = now + max(0, request.max_wait_ms)
    # Only the first read counts in the followers' state; a woken re-read is the same fetch.
    read = _read(manager, request, fetch, record_fetch=True, now=now)
    while read.total < request.min_bytes and fetch.asks_partitions and not read.failed:
        remaining_ms = deadline_ms - monotonic_ms()
        if remaining_ms <= 0:
            break
        # No await since the read above, so no change can have been missed before this wait starts; after a
        # timeout the re-read finds the time up and answers.
        changed = await manager.wait_for_change(request.from_follower, remaining_ms / 1000)
        if not changed and request.from_follower:
            # Every append and truncation wakes followers: a wait that ran out unwoken found nothing new, and a
            # second pass over an idle session of thousands of partitions was most of an idle broker's CPU.
            break
        fetch = sessions.reread(fetch, read_all=not manager.serving())
        read = _read(manager, request, fetch, record_fetch=False)
    sessions.record_answers(fetch, read.sent, read.settled, read.unsettled)
    if read.replicated:
        manager.record_replication_sent(read.replicated)
    return FetchAnswer(ErrorCode.NONE, fetch.session_id, read.topics)


def _session_context(
    manager: ReplicaManager, sessions: FetchSessionCache, request: FetchRequest, now: int
) -> FetchContext:
    image = manager.metadata.image
    fetch = sessions.new_context(
        request.session_id,
        request.session_epoch,
        [line if len(line.topic_id) == TOPIC_ID_BYTES else _keyed(image, line) for line in request.partitions],
        _forgotten_keys(image, request.forgotten),
        request.from_follower,
        now,
        request.replica_id,
        # While this broker refuses every partition alike, a settled one must be answered all the same.
        read_all=not manager.serving(),
    )
    if fetch.session is not None and not fetch.incremental:
        structlog.get_logger().info(
            "fetch_session_created",
            session_id=fetch.session_id,
            replica_id=request.replica_id,
            partitions=len(fetch.session.partitions),
        )
    return fetch


def _count_settled(manager: ReplicaManager, replica_id: int, settled_until: dict[PartitionKey, int]) -> None:
    """Listed partitions the session held settled: the Fetches that skipped them count first, so this Fetch's
    read finds the follower's state as if every Fetch had read them."""
    if not settled_until:
        return
    image = manager.metadata.image
    for (topic_id, partition), fetch_ms in settled_until.items():
        known = topic_by_id_bytes(image, topic_id)
        if known is not None:
            manager.count_idle_fetch(TopicPartition(known.name, partition), replica_id, fetch_ms)


def _keyed(image: MetadataImage, line: PartitionFetchState) -> PartitionFetchState:
    """A line by name keyed by its name's topic id: sessions and duplicates go by the id."""
    return dataclasses.replace(line, topic_id=topic_key(image, line.topic_id, line.topic))


def _forgotten_keys(image: MetadataImage, forgotten: Sequence[ForgottenPartition]) -> list[PartitionKey]:
    return [(topic_key(image, gone.topic_id, gone.topic), gone.partition) for gone in forgotten]


def _read(
    manager: ReplicaManager, request: FetchRequest, fetch: FetchContext, record_fetch: bool, now: int | None = None
) -> _Read:
    """Every partition of the fetch once, under the response's byte limit (Kafka's readFromLog); an incremental
    fetch answers only the partitions with news; one with an error always is."""
    image = manager.metadata.image
    read = _Read()
    limit = request.max_bytes
    first_whole = True  # until a partition returns records: Kafka's minOneMessage
    for target in fetch.targets:
        known = topic_by_id_bytes(image, target.topic_id)
        partitions: list[FetchPartitionAnswer] = []
        for cached in target.partitions:
            state = cached.state
            if known is None:
                by_id = len(target.topic_id) == TOPIC_ID_BYTES
                result = FetchPartitionResult(
                    ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                replica = None
            elif request.readable is not None and not request.readable(known.name):
                result = FetchPartitionResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                replica = None
            else:
                tp = TopicPartition(known.name, state.partition)
                max_bytes = min(state.partition_max_bytes or DEFAULT_PARTITION_MAX_BYTES, limit)
                result = _read_partition(manager, request, tp, state, max_bytes, first_whole, record_fetch, now)
                replica = manager.replicas.get(tp)
            records = result.records
            if records:
                first_whole = False
                limit = max(0, limit - len(records))
                if request.from_follower and known is not None and manager.throttles.leader.throttled:
                    read.replicated.append((known.name, state.partition, len(records)))
            log_start = replica.log.log_start_offset if replica is not None else -1
            failed = result.error != ErrorCode.NONE or result.diverging is not None
            read.failed |= failed
            if fetch.session is not None and fetch.session.reads_changed_only:
                if result.settled and not failed:  # as of now: a change made after this read is read again
                    read.settled.append(SettledRead(state.key, fetch.session.marks))
                else:
                    read.unsettled.append(state.key)
            if fetch.session is not None:
                answer = PartitionAnswer(len(records), failed, result.high_watermark, log_start)
                if fetch.incremental and not must_answer(cached, answer):
                    continue
                read.sent.append((cached, answer))
            read.total += len(records)
            partitions.append(
                FetchPartitionAnswer(
                    state.partition,
                    result.error,
                    result.high_watermark,
                    log_start,
                    records,
                    result.diverging,
                    replica.leader_id if replica is not None else -1,
                    replica.leader_epoch if replica is not None else -1,
                    result.last_stable_offset if result.last_stable_offset >= 0 else result.high_watermark,
                    result.aborted,
                )
            )
        if partitions:
            read.topics.append(_topic_answer(target, known is not None, partitions))
    return read


def _read_partition(
    manager: ReplicaManager,
    request: FetchRequest,
    tp: TopicPartition,
    state: PartitionFetchState,
    max_bytes: int,
    first_whole: bool,
    record_fetch: bool,
    now: int | None,
) -> FetchPartitionResult:
    if request.replica_id >= 0:
        return manager.follower_fetch(
            tp,
            request.replica_id,
            request.replica_epoch,
            state.current_leader_epoch,
            state.fetch_offset,
            state.last_fetched_epoch,
            max_bytes,
            record_fetch,
            first_whole,
            state.log_start_offset,
            now,
        )
    return manager.consumer_fetch(
        tp,
        state.fetch_offset,
        state.current_leader_epoch,
        max_bytes,
        state.last_fetched_epoch,
        first_whole,
        request.isolation_level,
    )


def _topic_answer(target: TopicTargets, known: bool, partitions: list[FetchPartitionAnswer]) -> FetchTopicAnswer:
    topic_id = target.topic_id if len(target.topic_id) == TOPIC_ID_BYTES else b""
    return FetchTopicAnswer(topic_id, target.topic, known, partitions)
