"""What the simulated world's clients saw, checked against each other as `analyze` checks a real run's client
histories (`deploy/analysis/history_invariants.py`, `group_invariants.py`), with its names and meanings, in Python
over the live run instead of Spark over files:

- InconsistentOffsets: no (partition, offset) holds two values across every read and acks=all acknowledgement.
- AbortedRead: no value whose send definitely failed (refused before the append) is ever read.
- ReadNeverWritten (the world's own): no read returns a value no producer sent.
- Duplicates: no value an idempotent producer sent is read at two offsets (a plain producer's retried batch may be
  appended twice: allowed, as `analyze`'s DuplicatesWithoutIdempotence anomaly).
- NonmonotonicPoll: each plain consumer reads a partition's offsets in increasing order (a group member: within
  one assignment, as it restarts from the committed offset after each join; a join may even return the same
  generation, when a moved coordinator loaded the group stable and its commits since were not stored).
- CommittedOffsetsMonotonic: a group's acknowledged commits (`offset_committed`) of a partition never go back.
- NoBackwardsPoll: no group member consumes a record below an offset its group had committed before.
- CommittedOffsetWithinLog (the world's own): no commit is past the highest high watermark a leader of its
  partition had reached: a consumer commits only what it read, and it reads only below the high watermark. The
  world sees leaders' high watermarks at its steps and when a commit arrives; a record read at offset N shows a
  leader had reached N + 1 too, even one that crashed before the next step.
- NoDoubleOwnership: in one generation of a classic group no partition is assigned to two members (`analyze`
  checks its KIP-848 form on the members' assignment events; a classic group's assignment is what SyncGroup gives).
- At the end, after the faults healed: every acks=all acknowledged record read by every plain consumer
  (NoCommittedRecordLost, as `analyze` reads it, through a consumer) and by the group (GroupConsumedEveryRecord:
  at least once, as `chaos --group-consumers` counts its unconsumed records). acks=1 and acks=0 records promise
  nothing after a leader's failure: acks=1 ones no read found are counted (LostAcksOneWrites, an anomaly).
  On a compacted topic a reader need not read a record a cleaner may have removed, as `analyze` excuses it: one a
  later record of its key replaced (acks=all acknowledged or read, at a higher offset), or a tombstone the leader
  no longer holds that the reader went past `delete.retention.ms` after it was sent, or after a later record of its
  key was sent (`tombstone_reads.py`). So each key's latest record is read, Kafka's promise to a consumer reading
  from the start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from minikafka.sim.invariants import Violation, compacted_key, tombstone_of
from minikafka.sim.tombstone_reads import TombstoneReads

ACKS_NAMES = {-1: "all", 1: "1", 0: "0"}


@dataclass(frozen=True)
class Read:
    """One record a client consumed."""

    reader: str
    partition: int
    offset: int
    value: bytes
    at_s: float
    group: str | None = None
    generation: int = -1
    assignment: int = 0  # which of the reader's assignments it read under (a group member's n-th join)


@dataclass
class ClientInvariants:
    high_watermark: Callable[[int], int]  # the highest a leader of the partition had reached, as the world saw it
    # A compacted topic's: whether the partition's leader holds the tombstone at the offset (None: not compacted).
    tombstone_held: Callable[[int, int], bool] | None = None
    tombstones: TombstoneReads | None = None  # a compacted topic's: when each tombstone may have been removed
    read_ends: dict[int, int] = field(default_factory=dict)  # partition -> one past the highest offset read
    violations: list[Violation] = field(default_factory=list)
    sent: set[bytes] = field(default_factory=set)
    idempotent: set[bytes] = field(default_factory=set)  # sent by an idempotent producer
    offsets_of: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # value -> where it was first read
    definitely_failed: set[bytes] = field(default_factory=set)
    succeeded: set[bytes] = field(default_factory=set)
    acked_all: dict[tuple[int, int], bytes] = field(default_factory=dict)  # acks=all acknowledged
    acked_one: dict[tuple[int, int], bytes] = field(default_factory=dict)  # acks=1 acknowledged
    values_at: dict[tuple[int, int], bytes] = field(default_factory=dict)  # the first value seen at each offset
    positions: dict[tuple[str, int, int], int] = field(default_factory=dict)  # (reader, assignment, p) -> next
    read_by: dict[str, set[tuple[int, int, bytes]]] = field(default_factory=dict)  # reader -> what it read
    group_read: set[tuple[int, int, bytes]] = field(default_factory=set)
    commits: dict[tuple[str, int], tuple[int, float]] = field(default_factory=dict)  # (group, p) -> (offset, at)
    owners: dict[tuple[str, int, int], str] = field(default_factory=dict)  # (group, generation, p) -> member
    reads: int = 0
    commits_seen: int = 0

    def _violated(self, invariant: str, detail: str) -> None:
        if all(known.invariant != invariant for known in self.violations):
            self.violations.append(Violation(invariant, detail))

    # ---- what the producers saw ----

    def sending(self, value: bytes, idempotent: bool = False, at_s: float | None = None) -> None:
        self.sent.add(value)
        if idempotent:
            self.idempotent.add(value)
        if self.tombstones is not None and at_s is not None:
            self.tombstones.sending(compacted_key(value), at_s)

    def acknowledged(
        self, acks: int, partition: int, offset: int | None, value: bytes, sent_at: float | None = None
    ) -> None:
        self.succeeded.add(value)
        if offset is None:
            return  # acks=0: the broker does not say where
        key = (partition, offset)
        if acks == -1:
            self.acked_all[key] = value
            self._observe_value(key, value, "acknowledged with acks=all")
            if self.tombstones is not None and sent_at is not None and self._a_tombstone(value):
                self.tombstones.acknowledged(partition, offset, sent_at)
        elif acks == 1:
            self.acked_one[key] = value

    def failed(self, value: bytes, definite: bool) -> None:
        if definite:
            self.definitely_failed.add(value)

    # ---- what the consumers saw ----

    def _observe_value(self, key: tuple[int, int], value: bytes, how: str) -> None:
        known = self.values_at.setdefault(key, value)
        if known != value:
            self._violated(
                "InconsistentOffsets",
                f"partition {key[0]} offset {key[1]} holds {known!r} and {value!r} ({how})",
            )

    def consumed(self, read: Read) -> None:
        self.reads += 1
        key = (read.partition, read.offset)
        self._observe_value(key, read.value, f"read by {read.reader}")
        if read.value not in self.sent:
            self._violated("ReadNeverWritten", f"{read.reader} read {read.value!r} at {key}, a value no producer sent")
        elif read.value in self.definitely_failed and read.value not in self.succeeded:
            self._violated("AbortedRead", f"{read.reader} read {read.value!r} at {key}, whose send definitely failed")
        first = self.offsets_of.setdefault(read.value, key)
        if first != key and read.value in self.idempotent and not self._a_tombstone(read.value):
            self._violated(
                "Duplicates", f"{read.value!r}, sent by an idempotent producer, was read at {first} and at {key}"
            )
        position = (read.reader, read.assignment, read.partition)
        if read.offset < self.positions.get(position, -1):
            self._violated(
                "NonmonotonicPoll",
                f"{read.reader} read partition {read.partition} offset {read.offset} after offset "
                f"{self.positions[position] - 1}",
            )
        self.positions[position] = read.offset + 1
        if read.offset >= self.read_ends.get(read.partition, 0):
            self.read_ends[read.partition] = read.offset + 1
        self.read_by.setdefault(read.reader, set()).add((read.partition, read.offset, read.value))
        if read.group is not None:
            self.group_read.add((read.partition, read.offset, read.value))
            self._check_backwards(read)
        elif self.tombstones is not None:
            self.tombstones.read(read.reader, read.partition, read.offset, read.at_s)

    def _check_backwards(self, read: Read) -> None:
        assert read.group is not None
        commit = self.commits.get((read.group, read.partition))
        if commit is not None and commit[1] < read.at_s and read.offset < commit[0]:
            self._violated(
                "NoBackwardsPoll",
                f"{read.reader} of group {read.group} consumed partition {read.partition} offset {read.offset} at "
                f"{read.at_s:.3f}s, after the group committed offset {commit[0]} at {commit[1]:.3f}s",
            )

    def assigned(self, group: str, generation: int, member: str, partitions: list[int]) -> None:
        for partition in partitions:
            owner = self.owners.setdefault((group, generation, partition), member)
            if owner != member:
                self._violated(
                    "NoDoubleOwnership",
                    f"group {group} generation {generation}: partition {partition} assigned to {owner} and {member}",
                )

    def observe_event(self, event: Mapping[str, Any], topic: str, at_s: float) -> None:
        """A coordinator's `offset_committed` event: the commit was stored and acknowledged."""
        if event.get("event") != "offset_committed" or event.get("topic") != topic:
            return
        self.commits_seen += 1
        group, partition, offset = str(event["group"]), int(event["partition"]), int(event["offset"])
        previous = self.commits.get((group, partition))
        if previous is not None and offset < previous[0]:
            self._violated(
                "CommittedOffsetsMonotonic",
                f"group {group} partition {partition}: committed offset {previous[0]} then {offset}",
            )
        reached = max(self.high_watermark(partition), self.read_ends.get(partition, 0))
        if offset > reached:
            self._violated(
                "CommittedOffsetWithinLog",
                f"group {group} committed partition {partition} offset {offset}, past the highest high watermark "
                f"its leaders reached ({reached})",
            )
        self.commits[(group, partition)] = (max(offset, previous[0]) if previous else offset, at_s)

    # ---- the end ----

    def unread(self, reader: str | None) -> list[tuple[int, int]]:
        """The acks=all acknowledged records `reader` (or the group: None) has not read at their offset, but for
        those a compacted topic's cleaner may have removed."""
        seen = self.group_read if reader is None else self.read_by.get(reader, set())
        unread = sorted(key for key, value in self.acked_all.items() if (*key, value) not in seen)
        if self.tombstone_held is None or not unread:
            return unread
        latest = self._latest_committed()
        return [key for key in unread if not self._maybe_cleaned(key, latest, reader)]

    def skipped_as_cleaned(self, reader: str | None) -> int:
        """How many acks=all acknowledged records `reader` (or the group: None) never read that a cleaner may have
        removed."""
        seen = self.group_read if reader is None else self.read_by.get(reader, set())
        missed = sum(1 for key, value in self.acked_all.items() if (*key, value) not in seen)
        return missed - len(self.unread(reader))

    def _latest_committed(self) -> dict[tuple[int, bytes], int]:
        """(partition, key) -> the highest offset of a record of the key acks=all acknowledged or read."""
        latest: dict[tuple[int, bytes], int] = {}
        committed = [(p, o, v) for (p, o), v in self.acked_all.items()]
        for p, o, v in (*committed, *(read for reads in self.read_by.values() for read in reads)):
            key = (p, compacted_key(v))
            latest[key] = max(o, latest.get(key, -1))
        return latest

    def _a_tombstone(self, value: bytes) -> bool:
        """A compacted topic's tombstone: every one of a key reads alike, so it is not unique as values are."""
        return self.tombstone_held is not None and value == tombstone_of(compacted_key(value))

    def _maybe_cleaned(self, where: tuple[int, int], latest: dict[tuple[int, bytes], int], reader: str | None) -> bool:
        value = self.acked_all[where]
        key = compacted_key(value)
        if latest.get((where[0], key), -1) > where[1]:
            return True  # replaced by a later record of its key
        if not self._removed_tombstone(where, value):
            return False
        return reader is None or self.tombstones is None or self.tombstones.may_have_missed(reader, key, *where)

    def _removed_tombstone(self, where: tuple[int, int], value: bytes) -> bool:
        assert self.tombstone_held is not None
        return self._a_tombstone(value) and not self.tombstone_held(*where)

    def check_final(self, readers: list[str], group: str | None) -> None:
        for reader in readers:
            missing = self.unread(reader)
            if missing:
                self._violated(
                    "NoCommittedRecordLost",
                    f"{reader} never read {len(missing)} acks=all acknowledged record(s) at their offsets, the first "
                    f"partition {missing[0][0]} offset {missing[0][1]}{self._tombstone_passed(reader, missing[0])}",
                )
        if group is not None:
            missing = self.unread(None)
            if missing:
                self._violated(
                    "GroupConsumedEveryRecord",
                    f"group {group} never consumed {len(missing)} acks=all acknowledged record(s), the first "
                    f"partition {missing[0][0]} offset {missing[0][1]}",
                )

    def _tombstone_passed(self, reader: str, where: tuple[int, int]) -> str:
        if self.tombstones is None or not self._a_tombstone(self.acked_all[where]):
            return ""
        progress = self.tombstones.progress.get((reader, where[0]))
        passed = None if progress is None else progress.passed(where[1])
        sent_at = self.tombstones.sent_at.get(where)
        if passed is None or sent_at is None:
            return ", a tombstone"
        retention_s = self.tombstones.delete_retention_s
        why = (
            f"within delete.retention.ms ({retention_s:g} s): no cleaner may have removed it"
            if passed < sent_at + retention_s
            else "and the leader still holds"
        )
        return f", a tombstone sent at {sent_at:.3f}s that it went past at {passed:.3f}s, {why}"

    def lost_acks_one(self) -> int:
        """acks=1 acknowledged records no consumer or group member read at their offset, once every acks=all one
        was read (allowed: LostAcksOneWrites); on a compacted topic, not those a cleaner may have removed."""
        seen = set().union(*self.read_by.values())
        unread = [(key, value) for key, value in self.acked_one.items() if (*key, value) not in seen]
        if self.tombstone_held is None or not unread:
            return len(unread)
        latest = self._latest_committed()
        return sum(
            1
            for (partition, offset), value in unread
            if latest.get((partition, compacted_key(value)), -1) <= offset
            and not self._removed_tombstone((partition, offset), value)
        )
