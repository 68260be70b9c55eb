"""Incremental fetch sessions, the leader's side (KIP-227, Kafka's FetchSession/FetchSessionCache/FetchManager).

A follower's full Fetch (epoch 0) creates a session holding every partition it fetches; its later Fetches carry the
session id and the next epoch, list only the partitions whose fetch state changed, and get back only the partitions
with news.

A follower's session also spares the leader the reads: a Fetch reads only the partitions it lists, those the leader
marked changed since (`mark_changed`: new records, a high watermark, log start or leadership moved), and those not
settled at their last read (behind, out of the ISR, failing) or changed after it (while its Fetch waited). A
settled partition skipped by a Fetch still counts as caught up for the ISR: the session vouches that its follower
was at the leader's log end as of the session's last Fetch, and `mark_changed` hands that time over before the
partition changes, as if every Fetch had read it. Consumers' sessions read every partition. Pure: time comes in as
`now_ms` and session ids from the `new_session_id` callable.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import NamedTuple

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
    position: int = 0  # its place in the session's fetch order (a follower's reads go in this order)


@dataclass
class FetchSession:
    session_id: int
    privileged: bool  # a follower's: it may evict a consumer's session that is not stale yet
    partitions: dict[PartitionKey, CachedPartition]  # in fetch order: partitions that returned data move last
    epoch: int  # the epoch the next incremental request must carry
    last_used_ms: int  # when its latest Fetch came
    replica_id: int = -1  # the fetching follower's id; -1: a consumer's
    # A follower's session: the partitions its next Fetch reads (see the module's docstring); the others are settled.
    unread: set[PartitionKey] = field(default_factory=set)
    next_position: int = 0
    # A follower's session: `mark_changed` calls so far, and the count at each partition's latest one, so that a
    # read's "settled" does not outlive a change made after it (e.g. while its Fetch waited).
    marks: int = 0
    marked_at: dict[PartitionKey, int] = field(default_factory=dict)

    @property
    def reads_changed_only(self) -> bool:
        return self.replica_id >= 0

    def place(self) -> int:
        """A position after every partition's."""
        self.next_position += 1
        return self.next_position


class SettledRead(NamedTuple):
    """A partition a follower's Fetch found settled, and its session's `marks` once it was read."""

    key: PartitionKey
    marks: int


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
    # Listed partitions a follower's session held as settled: the time up to which it vouches for them (to count
    # in the follower's state before this Fetch's own read counts it).
    settled_until: dict[PartitionKey, int] = field(default_factory=dict)

    @property
    def asks_partitions(self) -> bool:
        """Whether the Fetch asks for any partition (an idle session's asks for all it holds, though none is read):
        one that asks for none is answered at once."""
        return bool(self.targets) or (self.session is not None and bool(self.session.partitions))

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
        self._followers: dict[int, FetchSession] = {}  # the sessions that read changed partitions only

    def new_context(
        self,
        session_id: int,
        epoch: int,
        lines: Sequence[PartitionFetchState],
        forgotten: Iterable[PartitionKey],
        privileged: bool,
        now_ms: int,
        replica_id: int = -1,
        read_all: bool = False,
    ) -> FetchContext:
        """The context of a Fetch carrying `lines` (all of them in a full fetch, the changed ones in an incremental
        one) and `forgotten` (incremental: partitions to drop from the session) from follower `replica_id` (-1: a
        consumer). `read_all`: a follower's incremental Fetch reads every partition of its session all the same
        (the leader answers them all alike now, e.g. while it is not serving)."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                self._remove(session_id)  # a full fetch closes the session it names
            session = self._maybe_create(lines, privileged, now_ms, replica_id) if epoch == INITIAL_EPOCH else None
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
        settled_until = self._update(session, lines, forgotten)
        session.epoch = next_epoch(epoch)
        self._touch(session, now_ms)
        targets = self._targets(session, read_all)
        return FetchContext(ErrorCode.NONE, targets, session, incremental=True, settled_until=settled_until)

    def reread(self, context: FetchContext, read_all: bool = False) -> FetchContext:
        """The context of a woken re-read: a follower's incremental Fetch reads the partitions changed meanwhile
        too."""
        session = context.session
        if session is None or not context.incremental or not session.reads_changed_only:
            return context
        return dataclasses.replace(context, targets=self._targets(session, read_all))

    def mark_changed(self, key: PartitionKey, replica_ids: Collection[int] | None = None) -> dict[int, int]:
        """The leader is about to change partition `key` (records, high watermark, log start, leadership): the
        followers' sessions (those of `replica_ids` only, if given) read it at their next Fetch. Returns, by replica
        id, the latest Fetch time up to which a session held it settled (its follower caught up then), to count
        before the change."""
        vouched: dict[int, int] = {}
        for session in self._followers.values():
            if key not in session.partitions or (replica_ids is not None and session.replica_id not in replica_ids):
                continue
            session.marks += 1
            session.marked_at[key] = session.marks
            if key not in session.unread:
                session.unread.add(key)
                vouched[session.replica_id] = max(vouched.get(session.replica_id, -1), session.last_used_ms)
        return vouched

    def record_answers(
        self,
        context: FetchContext,
        sent: Iterable[tuple[CachedPartition, PartitionAnswer]],
        settled: Iterable[SettledRead] = (),
        unsettled: Iterable[PartitionKey] = (),
    ) -> None:
        """Remember what the sent answer told the follower, and which partitions of the answered read were settled
        (but for those changed since they were read: the answer did not tell of that change); partitions that
        returned records go last next time, so a response size limit cannot starve the partitions behind them
        (Kafka rotates the same way)."""
        session = context.session
        if session is None:
            return
        for cached, answer in sent:
            cached.high_watermark = answer.high_watermark
            cached.leader_log_start_offset = answer.log_start_offset
            if answer.records > 0:
                session.partitions[cached.state.key] = session.partitions.pop(cached.state.key)
                cached.position = session.place()
        if session.reads_changed_only:
            for read in settled:
                if session.marked_at.get(read.key, 0) <= read.marks:
                    session.unread.discard(read.key)
                    session.marked_at.pop(read.key, None)
            session.unread.update(unsettled)

    def _update(
        self, session: FetchSession, lines: Sequence[PartitionFetchState], forgotten: Iterable[PartitionKey]
    ) -> dict[PartitionKey, int]:
        """Apply an incremental Fetch's lines and forgotten partitions; the listed partitions it held settled."""
        settled_until = {}
        for line in lines:
            cached = session.partitions.get(line.key)
            if cached is None:
                session.partitions[line.key] = CachedPartition(line, position=session.place())
            else:
                cached.state = line
                if session.reads_changed_only and line.key not in session.unread:
                    settled_until[line.key] = session.last_used_ms
            if session.reads_changed_only:
                session.unread.add(line.key)
        for key in forgotten:
            session.partitions.pop(key, None)
            session.unread.discard(key)
            session.marked_at.pop(key, None)
        return settled_until

    @staticmethod
    def _targets(session: FetchSession, read_all: bool) -> list[TopicTargets]:
        if read_all or not session.reads_changed_only:
            return _grouped(session.partitions.values())
        partitions = session.partitions
        return _grouped(sorted((partitions[key] for key in session.unread), key=lambda cached: cached.position))

    def _maybe_create(
        self, lines: Sequence[PartitionFetchState], privileged: bool, now_ms: int, replica_id: int
    ) -> FetchSession | None:
        if self.max_slots <= 0:
            return None
        if len(self.sessions) >= self.max_slots and not self._evict_one(privileged, now_ms):
            return None
        session_id = self._new_session_id()
        while session_id == INVALID_SESSION_ID or session_id in self.sessions:
            session_id = self._new_session_id()
        partitions = {line.key: CachedPartition(line, position=index) for index, line in enumerate(lines)}
        session = FetchSession(session_id, privileged, partitions, next_epoch(INITIAL_EPOCH), now_ms, replica_id)
        session.next_position = len(partitions)
        self.sessions[session_id] = session
        if session.reads_changed_only:
            session.unread = set(partitions)
            self._followers[session_id] = session
        return session

    def _evict_one(self, privileged: bool, now_ms: int) -> bool:
        """Make room: the least recently used session if it is stale, else (for a follower) a consumer's."""
        oldest = next(iter(self.sessions.values()))
        if now_ms - oldest.last_used_ms >= self.eviction_ms:
            self._remove(oldest.session_id)
            return True
        if privileged:
            for session in self.sessions.values():
                if not session.privileged:
                    self._remove(session.session_id)
                    return True
        return False

    def _remove(self, session_id: int) -> None:
        self.sessions.pop(session_id, None)
        self._followers.pop(session_id, None)

    def _touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        self.sessions[session.session_id] = self.sessions.pop(session.session_id)
