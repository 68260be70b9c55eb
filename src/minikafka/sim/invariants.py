"""The safety properties a simulated run is checked against after every step, on what the nodes hold.

- NoCommittedRecordLost: every record a producer had acknowledged with acks=all, once below the high watermark of
  the partition's current leader (readable), is in its log at the offset it was acknowledged at, with its value;
  at the end of a run every one of them is readable. On a compacted topic a record whose key the leader holds again
  at a later offset, or whose key a later record was committed or acknowledged for, may be gone (a cleaner removes
  it), and so may a tombstone past its delete horizon, unless the leader still holds an older value of its key (a
  deleted key come back; a tombstone any producer wrote counts once seen committed); any other record gone breaks
  CompactedLatestValueKept (as `analyze` names it), each new leader's whole log is judged when it takes its epoch,
  and no offset ever holds another value.
- OneLeaderPerLeaderEpoch: no two brokers lead a partition in the same leader epoch.
- LeaderCandidateCompleteness (as `analyze` names it): a new leader's log ends at or past every high watermark a
  leader of the partition had reached before it led, so it is caught when elected, before any follower truncates.
- LogMatching (as `analyze` names it): any two replicas of a partition hold the same batches (offsets, leader
  epoch, CRC) from the later of their log starts up to the lower of their high watermarks, each capped at its own
  log end; on a compacted topic, whose replicas each clean their own log, the same value at every offset both hold.
- HighWatermarkMonotonic (as `analyze` names it): a leader's high watermark never goes back within its leader epoch
  (in one incarnation of its process).
- NeverTwoLeadersInSameEpoch (Raft): no two controllers lead the metadata quorum in the same epoch.
- LeaderHasAllAckedValues (Raft): a committed metadata entry (below a leader's high watermark) stays in the log of
  every later leader, in the epoch it was committed in.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.common.record_batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    CorruptRecordError,
    Record,
    RecordBatch,
    iter_batches,
)

# A v2 batch header (the layout `record_batch.read_header` unpacks): the world walks thousands of headers a simulated
# second, and reads them without building a RecordBatch each. Only the fields it checks: base offset, length, leader
# epoch, magic, CRC, (attributes skipped) last offset delta, (timestamps, producer id, epoch, sequence skipped) count.
_HEADER = struct.Struct(">qiibI2xi30xi")


@dataclass(frozen=True)
class Comeback:
    """A deleted key back on a leader: the leader, which missed the tombstone, and when the world first saw that
    tombstone committed (None if it never did)."""

    broker: int
    partition: int
    tombstone_offset: int
    committed_at: float | None


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str
    comeback: Comeback | None = None  # CompactedLatestValueKept's deleted key come back


@dataclass(frozen=True)
class Acknowledged:
    partition: int
    offset: int
    value: bytes


@dataclass(frozen=True)
class PartitionReplica:
    """What one broker holds of one partition now."""

    broker: int
    partition: int
    leads: bool
    leader_epoch: int
    high_watermark: int
    log_end_offset: int
    read: Callable[[int, int], dict[int, bytes]]  # the values of its log's records from one offset below another
    log_start_offset: int = 0
    replica_high_watermark: int = 0  # its log's high watermark, leader or follower
    batches: Callable[[int, int], list[BatchHeader]] = lambda _start, _end: []  # the batches within [start, end)
    incarnation: int = 0  # of its broker's process
    # Where its leader epoch starts in its log (its log end when it took the epoch), -1 if its cache has no entry:
    # the completeness check reads the log the leader was elected with, however much it took on since.
    epoch_start_offset: int = -1


def _elected_log_end(replica: PartitionReplica) -> int:
    """The log end the leader took its epoch with: its epoch's start offset, as `analyze` reads it from
    `become_leader`, or its log end now where its cache names no start."""
    if 0 <= replica.epoch_start_offset <= replica.log_end_offset:
        return replica.epoch_start_offset
    return replica.log_end_offset


class BatchHeader(NamedTuple):  # a tuple: thousands are built a simulated second, and a frozen dataclass costs more
    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int


@dataclass(frozen=True)
class RaftNode:
    node: int
    epoch: int
    leads: bool
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    epoch_at: Callable[[int], int]  # the epoch of the entry at an offset of its log


class HeaderSpan(NamedTuple):
    position: int
    size: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int


def header_spans(data: bytes, position: int = 0, require_body: bool = True) -> Iterator[HeaderSpan]:
    """The batch headers of `data` from `position` on, checked as `read_header` checks them (CorruptRecordError for
    a short or impossible header, a negative count or offset delta, and with `require_body` a torn batch)."""
    end = len(data)
    while position < end:
        if end - position < HEADER_SIZE:
            raise CorruptRecordError(f"truncated batch header ({end - position} of {HEADER_SIZE} bytes)", position)
        base, length, epoch, magic, crc, delta, count = _HEADER.unpack_from(data, position)
        if magic != MAGIC:
            raise CorruptRecordError(f"unsupported magic {magic} (expected {MAGIC})", position)
        if length < HEADER_SIZE - LOG_OVERHEAD:
            raise CorruptRecordError(f"batch length {length} is shorter than a header", position)
        size = length + LOG_OVERHEAD
        if require_body and size > end - position:
            raise CorruptRecordError(f"truncated batch ({end - position} of {size} bytes)", position)
        if count < 0 or delta < 0:
            raise CorruptRecordError("negative record count or offset delta", position)
        yield HeaderSpan(position, size, base, base + delta, epoch, crc)
        position += size


def batches_between(data: bytes, start: int, end: int) -> list[BatchHeader]:
    """The headers of the batches of a read of a log that lie wholly in [start, end)."""
    found = []
    for batch in header_spans(data):
        if batch.base_offset >= end:
            break
        if batch.base_offset >= start and batch.last_offset < end:
            found.append(BatchHeader(batch.base_offset, batch.last_offset, batch.leader_epoch, batch.crc))
    return found


class PairToMatch(NamedTuple):
    key: tuple[int, int, int]  # (partition, broker, broker)
    a: PartitionReplica
    b: PartitionReplica
    start: int
    end: int  # the lower of the two replicas' high watermarks, each capped at its own log end


def _pairs_to_match(
    replicas: Iterable[PartitionReplica], matched: dict[tuple[int, int, int], int]
) -> Iterator[PairToMatch]:
    """Every pair of replicas of each partition with a range below both high watermarks not yet matched."""
    by_partition: dict[int, list[PartitionReplica]] = {}
    for replica in replicas:
        by_partition.setdefault(replica.partition, []).append(replica)
    for partition, held in sorted(by_partition.items()):
        held.sort(key=lambda r: r.broker)
        for index, a in enumerate(held):
            for b in held[index + 1 :]:
                key = (partition, a.broker, b.broker)
                start = max(a.log_start_offset, b.log_start_offset, matched.get(key, 0))
                end = min(
                    min(a.replica_high_watermark, a.log_end_offset), min(b.replica_high_watermark, b.log_end_offset)
                )
                if end > start:
                    yield PairToMatch(key, a, b, start, end)


def _unmatched(pair: PairToMatch, what: str, mine: object, theirs: object) -> Violation:
    return Violation(
        "LogMatching",
        f"partition {pair.key[0]}: brokers {pair.a.broker} and {pair.b.broker} hold different {what} below both high "
        f"watermarks ({pair.a.replica_high_watermark}, {pair.b.replica_high_watermark}) from offset {pair.start}: "
        f"{mine} and {theirs}",
    )


def log_matching(replicas: Iterable[PartitionReplica], matched: dict[tuple[int, int, int], int]) -> Violation | None:
    """LogMatching over every pair of replicas of each partition, from where `matched` (partition, broker, broker)
    says they were last found to match; it records how far they match now."""
    for pair in _pairs_to_match(replicas, matched):
        mine, theirs = pair.a.batches(pair.start, pair.end), pair.b.batches(pair.start, pair.end)
        if mine != theirs:
            differing = next((x, y) for x, y in zip([*mine, None], [*theirs, None], strict=False) if x != y)
            return _unmatched(pair, "batches", *differing)
        if mine:
            matched[pair.key] = mine[-1].last_offset + 1
    return None


def compacted_log_matching(
    replicas: Iterable[PartitionReplica], matched: dict[tuple[int, int, int], int]
) -> Violation | None:
    """LogMatching on a compacted topic, whose replicas each clean their own log: at every offset both replicas of
    a pair still hold below both high watermarks, the same value."""
    for pair in _pairs_to_match(replicas, matched):
        mine, theirs = pair.a.read(pair.start, pair.end), pair.b.read(pair.start, pair.end)
        differing = next((o for o in sorted(mine.keys() & theirs.keys()) if mine[o] != theirs[o]), None)
        if differing is not None:
            return _unmatched(pair, f"values at offset {differing}", mine[differing], theirs[differing])
        matched[pair.key] = pair.end
    return None


KEY_SEPARATOR = b"="  # a compacted run's values start with their record's key: `key=value`; a tombstone is `key=`


def tombstone_of(key: bytes) -> bytes:
    """What a compacted run's tombstone (a null value) of `key` reads as."""
    return key + KEY_SEPARATOR


def _value_of(record: Record) -> bytes:
    if record.value is None:
        return tombstone_of(record.key) if record.key is not None else b""
    return record.value


def compacted_key(value: bytes) -> bytes:
    """The key a compacted run's value was written with."""
    return value.partition(KEY_SEPARATOR)[0]


def _last_offsets(values: dict[int, bytes]) -> dict[bytes, int]:
    """Each key's last offset among the values of a compacted run's log."""
    return {compacted_key(value): offset for offset, value in sorted(values.items())}


class RecordsRead(NamedTuple):
    values: dict[int, bytes]  # by offset
    next_offset: int  # past the last batch read: a cleaned batch may hold none of its offsets' records


def records_between(data: bytes, start: int, end: int) -> RecordsRead:
    """The values of the records at offsets in [start, end) of a read of a log. A batch whose records do not decode
    (a flipped bit) holds none here, and the read goes on after it; a header that does not decode ends the read."""
    values: dict[int, bytes] = {}
    next_offset = start
    try:
        for batch in iter_batches(data):
            if batch.last_offset < start:
                continue
            if batch.base_offset >= end:
                break
            values.update(_batch_values(batch, start, end))
            next_offset = batch.last_offset + 1
    except CorruptRecordError:
        pass
    return RecordsRead(values, next_offset)


def _batch_values(batch: RecordBatch, start: int, end: int) -> dict[int, bytes]:
    try:
        return {record.offset: _value_of(record) for record in batch.records() if start <= record.offset < end}
    except CorruptRecordError:
        return {}


@dataclass
class Invariants:
    acknowledged: dict[int, list[Acknowledged]] = field(default_factory=dict)  # by partition, in ack order
    partition_leaders: dict[tuple[int, int], int] = field(default_factory=dict)  # (partition, epoch) -> broker
    raft_leaders: dict[int, int] = field(default_factory=dict)  # epoch -> controller
    committed: dict[int, int] = field(default_factory=dict)  # metadata offset -> epoch of its committed entry
    _checked: dict[int, int] = field(default_factory=dict)  # partition -> acknowledgements checked in full
    high_watermarks: dict[int, int] = field(default_factory=dict)  # partition -> the highest HWM a leader reached
    # (broker, incarnation, partition, leader epoch) -> the highest HWM it had as leader
    leader_high_watermarks: dict[tuple[int, int, int, int], int] = field(default_factory=dict)
    compacted: bool = False  # the topic is compacted and its values carry their keys (`compacted_key`)
    _judged_leaders: set[tuple[int, int]] = field(default_factory=set)  # (partition, leader epoch): whole log judged
    # Compacted, by partition: each key's highest offset seen below a leader's high watermark (committed), and how
    # far each partition's committed log has been read for them, so a record removed since still counts.
    _committed: dict[int, dict[bytes, int]] = field(default_factory=dict)
    _scanned: dict[int, int] = field(default_factory=dict)
    # Compacted, by partition: the keys whose newest committed record is a tombstone, at its offset. Whoever wrote
    # it, the key stays deleted: no older value of it may come back.
    _committed_tombstones: dict[int, dict[bytes, int]] = field(default_factory=dict)
    _tombstone_committed_at: dict[tuple[int, int], float] = field(default_factory=dict)  # (partition, offset)
    now: float = 0.0  # the simulated time of the check under way, set by the world

    def acknowledge(self, record: Acknowledged) -> None:
        self.acknowledged.setdefault(record.partition, []).append(record)

    def _note_committed(
        self, partition: int, last: dict[bytes, int], values: dict[int, bytes], high_watermark: int
    ) -> None:
        """`last`: each key's last offset in `values`, the leader's up to `high_watermark` from where it was read."""
        committed = self._committed.setdefault(partition, {})
        tombstones = self._committed_tombstones.setdefault(partition, {})
        for key, offset in last.items():
            if offset > committed.get(key, -1):
                committed[key] = offset
                if values.get(offset) == tombstone_of(key):
                    tombstones[key] = offset
                    self._tombstone_committed_at.setdefault((partition, offset), self.now)
                else:
                    tombstones.pop(key, None)
        self._scanned[partition] = max(self._scanned.get(partition, 0), high_watermark)

    def _scan_committed(self, leader: PartitionReplica) -> None:
        """Note the keys' last records the leader committed since the partition was last read for them."""
        low = self._scanned.get(leader.partition, 0)
        if leader.high_watermark > low:
            values = leader.read(low, leader.high_watermark)
            self._note_committed(leader.partition, _last_offsets(values), values, leader.high_watermark)

    def _comeback(self, leader: PartitionReplica, tombstone_offset: int) -> Comeback:
        committed_at = self._tombstone_committed_at.get((leader.partition, tombstone_offset))
        return Comeback(leader.broker, leader.partition, tombstone_offset, committed_at)

    def _deleted_key_back(self, leader: PartitionReplica) -> Violation | None:
        """A key whose newest committed record is a tombstone below the leader's high watermark must not hold an
        older value again as its last record there: a leader that missed the tombstone, which the old leader's
        cleaner then removed, would bring the key back. Read whole, so judged once per leader epoch."""
        tombstones = {
            key: offset
            for key, offset in self._committed_tombstones.get(leader.partition, {}).items()
            if offset < leader.high_watermark
        }
        if not tombstones:
            return None
        values = leader.read(0, leader.high_watermark)
        last = _last_offsets(values)
        for key, offset in sorted(tombstones.items(), key=lambda item: item[1]):
            held = last.get(key, -1)
            if 0 <= held < offset and values[held] != tombstone_of(key):
                return Violation(
                    "CompactedLatestValueKept",
                    f"partition {leader.partition}: broker {leader.broker}, leader in epoch {leader.leader_epoch} "
                    f"with high watermark {leader.high_watermark}, holds {values[held]!r} at offset {held}, where "
                    f"its key's tombstone at offset {offset} was committed: its key came back with an older value",
                    self._comeback(leader, offset),
                )
        return None

    def _replaced_since(self, record: Acknowledged, acked: list[Acknowledged]) -> bool:
        """A later record of its key was committed (seen below a leader's high watermark, by any producer) or
        acknowledged with acks=all: compaction may have removed it, and that later one stands for the key."""
        key = compacted_key(record.value)
        if self._committed.get(record.partition, {}).get(key, -1) > record.offset:
            return True
        return any(later.offset > record.offset and compacted_key(later.value) == key for later in acked)

    def check(self, replicas: Iterable[PartitionReplica], raft: Iterable[RaftNode]) -> Violation | None:
        """Check every invariant on what the nodes hold now; the first one broken, if any."""
        return self._check_partitions(list(replicas)) or self._check_raft(list(raft))

    def _check_partitions(self, replicas: list[PartitionReplica]) -> Violation | None:
        leaders: dict[int, PartitionReplica] = {}
        for replica in replicas:
            if not replica.leads:
                continue
            key = (replica.partition, replica.leader_epoch)
            new_leader = key not in self.partition_leaders
            first = self.partition_leaders.setdefault(key, replica.broker)
            reached = self.high_watermarks.get(replica.partition, 0)
            elected_with = _elected_log_end(replica)
            if new_leader and elected_with < reached:
                return Violation(
                    "LeaderCandidateCompleteness",
                    f"broker {replica.broker} leads partition {replica.partition} in leader epoch "
                    f"{replica.leader_epoch} with its log ending at {elected_with} when it took the epoch, below the "
                    f"high watermark {reached} an earlier leader had reached",
                )
            if first != replica.broker:
                return Violation(
                    "OneLeaderPerLeaderEpoch",
                    f"brokers {first} and {replica.broker} both led partition {replica.partition} in leader epoch "
                    f"{replica.leader_epoch}",
                )
            held = (replica.broker, replica.incarnation, replica.partition, replica.leader_epoch)
            had = self.leader_high_watermarks.setdefault(held, replica.high_watermark)
            if replica.high_watermark < had:
                return Violation(
                    "HighWatermarkMonotonic",
                    f"broker {replica.broker}, leader of partition {replica.partition} in leader epoch "
                    f"{replica.leader_epoch}: high watermark {had} -> {replica.high_watermark}",
                )
            self.leader_high_watermarks[held] = replica.high_watermark
            current = leaders.get(replica.partition)
            if current is None or replica.leader_epoch > current.leader_epoch:
                leaders[replica.partition] = replica
        for partition, leader in sorted(leaders.items()):
            # Compacted, a new leader's whole log is judged once: a follower that missed a tombstone the leader's
            # cleaner then removed would bring back the older value of a key deleted long before.
            judged = (partition, leader.leader_epoch)
            whole = self.compacted and judged not in self._judged_leaders
            violation = self._check_acknowledged(partition, leader, full=False, whole_log=whole)
            if violation is None and whole:
                violation = self._deleted_key_back(leader)
            if violation is not None:
                return violation
            self._judged_leaders.add(judged)
        for replica in replicas:  # after the new leaders were checked: what was reached before they led
            if replica.leads and replica.high_watermark > self.high_watermarks.get(replica.partition, 0):
                self.high_watermarks[replica.partition] = replica.high_watermark
        return None

    def _check_acknowledged(
        self, partition: int, leader: PartitionReplica, full: bool, whole_log: bool = False
    ) -> Violation | None:
        """The acknowledged records the leader lets consumers read (below its high watermark): those not checked
        yet (all of them when `full` or `whole_log`), and the newest readable one always; at the end (`full`) all
        must be readable."""
        acked = self.acknowledged.get(partition, [])
        start = 0 if full or whole_log else self._checked.get(partition, 0)
        end = start
        while end < len(acked) and acked[end].offset < leader.high_watermark:
            end += 1
        if full and end < len(acked):
            return Violation(
                "NoCommittedRecordLost",
                f"partition {partition}: offset {acked[end].offset} was acknowledged but its leader, broker "
                f"{leader.broker} in leader epoch {leader.leader_epoch}, never let it be read (high watermark "
                f"{leader.high_watermark})",
            )
        newest = [acked[end - 1]] if end > 0 and acked[end - 1].offset < leader.high_watermark else []
        checked = acked[start:end] + newest
        if not checked:
            if self.compacted:  # writes of acks=1 and acks=0 only: their committed records still count
                self._scan_committed(leader)
            return None
        low = min(record.offset for record in checked)
        if self.compacted:  # what replaces a record may lie anywhere below the high watermark, and is noted there
            low = min(low, self._scanned.get(partition, 0))
            values = leader.read(low, leader.high_watermark)
        else:
            values = leader.read(low, max(r.offset for r in checked) + 1)
        removed = self._removed_by_compaction(leader, values, low, acked)
        for record in checked:
            value = values.get(record.offset)
            if value == record.value:
                continue
            why = removed(record) if value is None else ""
            if why is None:
                continue
            where = (
                f"partition {partition}: broker {leader.broker}, leader in epoch {leader.leader_epoch} with high "
                f"watermark {leader.high_watermark}, holds"
            )
            if value is None and self.compacted:
                # A gone tombstone breaks it only when its key came back.
                back = (
                    self._comeback(leader, record.offset)
                    if record.value == tombstone_of(compacted_key(record.value))
                    else None
                )
                return Violation("CompactedLatestValueKept", f"{where} {why}", back)
            return Violation(
                "NoCommittedRecordLost",
                f"{where} {value!r} at offset {record.offset}, where {record.value!r} was acknowledged",
            )
        self._checked[partition] = end
        return None

    def _removed_by_compaction(
        self, leader: PartitionReplica, values: dict[int, bytes], low: int, acked: list[Acknowledged]
    ) -> Callable[[Acknowledged], str | None]:
        """Why a record the leader no longer holds breaks CompactedLatestValueKept, or None when a cleaner may have
        removed it, as `analyze` judges: the leader holds its key again at a later offset, a later record of its
        key was committed or acknowledged (that one stands for the key), or it was a tombstone and the key's
        last record the leader holds is not an older value (a deleted key may be absent once its
        `delete.retention.ms` passed, but must not come back). Never None unless the topic is compacted. `values`
        are the leader's from `low` up to its high watermark; below `low` it is read only for a gone tombstone. The
        keys' last offsets in them are noted as committed first."""
        if not self.compacted:
            return lambda _record: "the topic is not compacted"
        last = _last_offsets(values)
        self._note_committed(leader.partition, last, values, leader.high_watermark)
        below: list[dict[bytes, int]] = []  # the last offsets below `low`, read once if a gone tombstone needs them

        def removed(record: Acknowledged) -> str | None:
            key = compacted_key(record.value)
            held = last.get(key, -1)
            if held > record.offset or self._replaced_since(record, acked):
                return None
            if held < 0 and low > 0:
                if not below:
                    below.append(_last_offsets(leader.read(0, low)))
                held = below[0].get(key, -1)
                older = leader.read(held, held + 1).get(held) if held >= 0 else None
            else:
                older = values.get(held)
            gone = f"nothing at offset {record.offset}, where {record.value!r} was acknowledged"
            if record.value != tombstone_of(key):
                return f"{gone}, and no later record of its key"
            if held < 0 or older == tombstone_of(key):
                return None
            return f"{gone}: its key came back with the older value {older!r} at offset {held}"

        return removed

    def check_all_acknowledged(self, replicas: Iterable[PartitionReplica]) -> Violation | None:
        """The final read: every acknowledged record, on each partition's leader."""
        leaders: dict[int, PartitionReplica] = {}
        for replica in replicas:
            if replica.leads and (
                replica.partition not in leaders or replica.leader_epoch > leaders[replica.partition].leader_epoch
            ):
                leaders[replica.partition] = replica
        for partition in sorted(self.acknowledged):
            leader = leaders.get(partition)
            if leader is None:
                return Violation("NoCommittedRecordLost", f"partition {partition} has no leader at the end of the run")
            violation = self._check_acknowledged(partition, leader, full=True)
            if violation is not None:
                return violation
        for partition in sorted(self._committed_tombstones):
            if partition in leaders and (violation := self._deleted_key_back(leaders[partition])) is not None:
                return violation
        return None

    def lost(self, replicas: Iterable[PartitionReplica]) -> int:
        """How many acknowledged records each partition's leader does not hold, readable, at its offset now."""
        leaders: dict[int, PartitionReplica] = {}
        for replica in replicas:
            if replica.leads and (
                replica.partition not in leaders or replica.leader_epoch > leaders[replica.partition].leader_epoch
            ):
                leaders[replica.partition] = replica
        missing = 0
        for partition, acked in self.acknowledged.items():
            leader = leaders.get(partition)
            if leader is None:
                missing += len(acked)
                continue
            values = leader.read(0, leader.high_watermark)
            removed = self._removed_by_compaction(leader, values, 0, acked)
            missing += sum(
                1 for record in acked if values.get(record.offset) != record.value and removed(record) is not None
            )
        return missing

    def _check_raft(self, nodes: list[RaftNode]) -> Violation | None:
        leader: RaftNode | None = None
        for node in nodes:
            if not node.leads:
                continue
            first = self.raft_leaders.setdefault(node.epoch, node.node)
            if first != node.node:
                return Violation(
                    "NeverTwoLeadersInSameEpoch", f"controllers {first} and {node.node} both led epoch {node.epoch}"
                )
            if leader is None or node.epoch > leader.epoch:
                leader = node
        if leader is None:
            return None
        for offset, epoch in self.committed.items():
            if offset < leader.log_start_offset:
                continue  # in a snapshot
            if offset >= leader.log_end_offset or leader.epoch_at(offset) != epoch:
                held = "nothing" if offset >= leader.log_end_offset else f"epoch {leader.epoch_at(offset)}"
                return Violation(
                    "LeaderHasAllAckedValues",
                    f"metadata offset {offset} was committed in epoch {epoch}; the leader, controller {leader.node} "
                    f"in epoch {leader.epoch}, holds {held} there",
                )
        newest = leader.high_watermark - 1
        if leader.log_start_offset <= newest < leader.log_end_offset and newest >= max(self.committed, default=-1):
            self.committed = {newest: leader.epoch_at(newest)}  # matching it there, a log matches below (Raft)
        return None
