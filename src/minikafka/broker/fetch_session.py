"""Incremental fetch sessions, the leader's side (KIP-227, Kafka's FetchSession/FetchSessionCache/FetchManager).

A follower's full Fetch (epoch 0) creates a session holding every partition it fetches; its later Fetches carry the
session id and the next epoch, list only the partitions whose fetch state changed, and get back only the partitions
with news. The leader still reads every partition of the session on every Fetch (so idle followers stay caught up
for the ISR); what an idle partition no longer costs is its place in both messages. Pure: time comes in as `now_ms`
and session ids from the `new_session_id` callable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby

from minikafka.common.errors import ErrorCode

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0  # a full fetch that asks for a new session
FINAL_EPOCH = -1  # a full fetch without a session (consumers), closing `session_id` if one is named
MAX_EPOCH = 2**31 - 1
MAX_SESSION_ID = 2**31 - 1  # session ids are positive int32s
# Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: an unused session may be evicted for a new one after this long.
SESSION_EVICTION_MS = 120_000

PartitionKey = tuple[bytes, int]  # (topic id, partition)


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`; it wraps to 1, never back to INITIAL_EPOCH."""
    return 1 if epoch >= MAX_EPOCH else epoch + 1


@dataclass(frozen=True, slots=True)
class PartitionFetchState:
    """One partition's line in a Fetch: what the follower sends, and what the leader's session keeps of it."""

    topic_id: bytes
    topic: str
    partition: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int
    partition_max_bytes: int

    @property
    def key(self) -> PartitionKey:
        return (self.topic_id, self.partition)


@dataclass(slots=True)
class CachedPartition:
    """A partition of a session (or of a sessionless Fetch): the follower's fetch state as last sent, and what the
    leader last answered for it."""

    state: PartitionFetchState
    high_watermark: int = -1  # as last sent; -1: never sent
    leader_log_start_offset: int = -1


@dataclass
class FetchSession:
    session_id: int
    privileged: bool  # a follower's: it may evict a consumer's session that is not stale yet
    partitions: dict[PartitionKey, CachedPartition]  # in fetch order: partitions that returned data move last
    epoch: int  # the epoch the next incremental request must carry
    last_used_ms: int


@dataclass(frozen=True)
class TopicTargets:
    topic_id: bytes
    topic: str
    partitions: list[CachedPartition]


@dataclass(frozen=True)
class FetchContext:
    """What one Fetch reads and how its answer is cut (Kafka's Sessionless/Full/IncrementalFetchContext)."""

    error: ErrorCode
    targets: list[TopicTargets] = field(default_factory=list)
    session: FetchSession | None = None  # set: record what is answered in it
    incremental: bool = False  # answer only the partitions with news

    @property
    def session_id(self) -> int:
        """What the answer carries: the session the follower continues with, if any."""
        return self.session.session_id if self.session is not None else INVALID_SESSION_ID


@dataclass(frozen=True)
class PartitionAnswer:
    """What the leader found for one partition of a Fetch, to decide whether an incremental answer lists it."""

    records: int  # bytes of records
    error: bool  # an error code or a diverging epoch
    high_watermark: int
    log_start_offset: int


def must_answer(cached: CachedPartition, answer: PartitionAnswer) -> bool:
    return (
        answer.records > 0
        or answer.error
        or answer.high_watermark != cached.high_watermark
        or answer.log_start_offset != cached.leader_log_start_offset
    )


def _grouped(partitions: Iterable[CachedPartition]) -> list[TopicTargets]:
    """Consecutive partitions of one topic as one topic entry (a topic may appear twice, as in Kafka's answers)."""
    targets = []
    for topic_id, group in groupby(partitions, key=lambda cached: cached.state.topic_id):
        members = list(group)
        targets.append(TopicTargets(topic_id, members[0].state.topic, members))
    return targets


class FetchSessionCache:
    """The leader's sessions (`max.incremental.fetch.session.cache.slots` of them; 0 turns sessions off)."""

    def __init__(
        self, max_slots: int, new_session_id: Callable[[], int], eviction_ms: int = SESSION_EVICTION_MS
    ) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        self._new_session_id = new_session_id
        self.sessions: dict[int, FetchSession] = {}  # least recently used first

    def new_context(
        self,
        session_id: int,
        epoch: int,
        lines: Sequence[PartitionFetchState],
        forgotten: Iterable[PartitionKey],
        privileged: bool,
        now_ms: int,
    ) -> FetchContext:
        """The context of a Fetch carrying `lines` (all of them in a full fetch, the changed ones in an incremental
        one) and `forgotten` (incremental: partitions to drop from the session)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self.sessions.pop(session_id, None)  # a full fetch closes the session it names
            session = self._maybe_create(lines, privileged, now_ms) if epoch == INITIAL_EPOCH else None
            if session is None:
                # A partition listed twice is read once, as a session holds it (Kafka keys a fetch's partitions
                # the same way): each line would otherwise cost a read and a place in the answer.
                unique = {line.key: line for line in lines}
                return FetchContext(ErrorCode.NONE, _grouped(CachedPartition(line) for line in unique.values()))
            return FetchContext(ErrorCode.NONE, _grouped(session.partitions.values()), session)
        session = self.sessions.get(session_id)
        if session is None:
            return FetchContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return FetchContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        for line in lines:
            cached = session.partitions.get(line.key)
            if cached is None:
                session.partitions[line.key] = CachedPartition(line)
            else:
                cached.state = line
        for key in forgotten:
            session.partitions.pop(key, None)
        session.epoch = next_epoch(epoch)
        self._touch(session, now_ms)
        return FetchContext(ErrorCode.NONE, _grouped(session.partitions.values()), session, incremental=True)

    def record_answers(self, context: FetchContext, sent: Iterable[tuple[CachedPartition, PartitionAnswer]]) -> None:
        """Remember what the sent answer told the follower; partitions that returned records go last next time, so
        a response size limit cannot starve the partitions behind them (Kafka rotates the same way)."""
        session = context.session
        if session is None:
            return
        for cached, answer in sent:
            cached.high_watermark = answer.high_watermark
            cached.leader_log_start_offset = answer.log_start_offset
            if answer.records > 0:
                session.partitions[cached.state.key] = session.partitions.pop(cached.state.key)

    def _maybe_create(self, lines: Sequence[PartitionFetchState], privileged: bool, now_ms: int) -> FetchSession | None:
        if self.max_slots <= 0:
            return None
        if len(self.sessions) >= self.max_slots and not self._evict_one(privileged, now_ms):
            return None
        session_id = self._new_session_id()
        while session_id == INVALID_SESSION_ID or session_id in self.sessions:
            session_id = self._new_session_id()
        partitions = {line.key: CachedPartition(line) for line in lines}
        session = FetchSession(session_id, privileged, partitions, next_epoch(INITIAL_EPOCH), now_ms)
        self.sessions[session_id] = session
        return session

    def _evict_one(self, privileged: bool, now_ms: int) -> bool:
        """Make room: the least recently used session if it is stale, else (for a follower) a consumer's."""
        oldest = next(iter(self.sessions.values()))
        if now_ms - oldest.last_used_ms >= self.eviction_ms:
            del self.sessions[oldest.session_id]
            return True
        if privileged:
            for session in self.sessions.values():
                if not session.privileged:
                    del self.sessions[session.session_id]
                    return True
        return False

    def _touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        self.sessions[session.session_id] = self.sessions.pop(session.session_id)
