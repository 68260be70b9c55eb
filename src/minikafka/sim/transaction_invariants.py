"""What the simulated world's transactional producers and read_committed consumers saw, checked as `analyze` checks
a real run's transactional histories (`deploy/analysis/transaction_invariants.py`), with its names and meanings, in
Python over the live run:

- AbortedRead: a read_committed consumer never returns a record of a transaction its producer aborted or never
  asked to commit. The world checks it as the record is read: a transaction whose producer had sent no EndTxn(commit)
  by then is aborted or still open (its COMMIT marker, written only after the coordinator has the EndTxn, cannot be
  in any log yet), so the read is of uncommitted data either way.
- TornTransaction: a read_committed consumer that returned some of a committed transaction's records returned every
  one it went past (its position beyond the record's offset), at every step: all of a transaction or none of it.
  Transactions whose EndTxn(commit) was sent but not answered count too (all or none, whichever the coordinator did).
- NoCommittedRecordLost (the transactional part of `analyze`'s): at the end, after the faults healed, every
  read_committed consumer has read every record of every transaction whose commit was acknowledged.
- OpenTransactionHoldsLastStableOffset (the world's own; `analyze` sees only a real run's LSO events): at every
  step, no leader of the transactional topic has its last stable offset past the first offset of a transaction
  still open: its producer has sent no EndTxn, started no new session that fences it, and it is younger than the
  transaction timeout (after which the coordinator may abort it).
- InconsistentOffsets and ReadNeverWritten, as in `client_invariants.py`, over the transactional topic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from minikafka.client.transactional_session import TRANSACTION_TIMEOUT
from minikafka.sim.invariants import Violation


class TxnKey(NamedTuple):
    producer: str
    number: int  # -1: no transaction begun in this session yet

    @property
    def label(self) -> str:
        return f"{self.producer}#{self.number}"


class LeaderLso(NamedTuple):
    broker: int
    partition: int
    last_stable_offset: int


@dataclass
class Txn:
    key: TxnKey
    values: dict[int, list[bytes]]  # partition -> its records' values
    started_s: float
    offsets: dict[bytes, tuple[int, int]] = field(default_factory=dict)  # value -> (partition, offset) acknowledged
    first_offsets: dict[int, int] = field(default_factory=dict)  # partition -> its batch's base offset
    end: str | None = None  # the first EndTxn sent (commit or abort); abort when a new InitProducerId fenced it
    committed: bool = False  # the commit was acknowledged

    @property
    def size(self) -> int:
        return sum(len(values) for values in self.values.values())


@dataclass
class TransactionInvariants:
    violations: list[Violation] = field(default_factory=list)
    txns: dict[TxnKey, Txn] = field(default_factory=dict)
    of_value: dict[bytes, Txn] = field(default_factory=dict)
    latest: dict[str, TxnKey] = field(default_factory=dict)  # producer -> its newest transaction
    values_at: dict[tuple[int, int], bytes] = field(default_factory=dict)
    read: dict[str, dict[TxnKey, set[bytes]]] = field(default_factory=dict)  # reader -> transaction -> values read
    # reader -> the transactions it read only some of, in the order first read (a dict: a set's order would change
    # with the process's string hashing, and which violation is reported first with it)
    partly_read: dict[str, dict[TxnKey, None]] = field(default_factory=dict)
    positions: dict[str, dict[int, int]] = field(default_factory=dict)  # reader -> partition -> next offset
    reads: int = 0

    def _violated(self, invariant: str, detail: str) -> None:
        if all(known.invariant != invariant for known in self.violations):
            self.violations.append(Violation(invariant, detail))

    # ---- what the producers saw ----

    def begin(self, key: TxnKey, values: dict[int, list[bytes]], at_s: float) -> None:
        txn = Txn(key, values, at_s)
        self.txns[key] = txn
        self.latest[key.producer] = key
        for batch in values.values():
            for value in batch:
                self.of_value[value] = txn

    def batch_acknowledged(self, key: TxnKey, partition: int, base_offset: int) -> None:
        txn = self.txns.get(key)
        if txn is None or base_offset < 0:
            return
        txn.first_offsets.setdefault(partition, base_offset)
        for index, value in enumerate(txn.values[partition]):
            where = (partition, base_offset + index)
            txn.offsets[value] = where
            self._observe_value(where, value, f"acknowledged in transaction {key.label}")

    def ending(self, key: TxnKey, commit: bool) -> None:
        """An EndTxn is about to be sent: from now on the coordinator may write its markers."""
        txn = self.txns.get(key)
        if txn is not None and txn.end is None:
            txn.end = "commit" if commit else "abort"

    def ended(self, key: TxnKey, committed: bool) -> None:
        txn = self.txns.get(key)
        if txn is not None:
            txn.committed = committed

    def fencing(self, producer: str) -> None:
        """A new InitProducerId of the producer's transactional id: the coordinator aborts what it left open."""
        key = self.latest.get(producer)
        txn = self.txns.get(key) if key is not None else None
        if txn is not None and txn.end is None:
            txn.end = "abort"

    # ---- what the read_committed consumers saw ----

    def _observe_value(self, where: tuple[int, int], value: bytes, how: str) -> None:
        known = self.values_at.setdefault(where, value)
        if known != value:
            self._violated(
                "InconsistentOffsets", f"partition {where[0]} offset {where[1]} holds {known!r} and {value!r} ({how})"
            )

    def polled(
        self, reader: str, records: list[tuple[int, int, bytes]], positions: Mapping[int, int], at_s: float
    ) -> None:
        """One poll's records and the positions it left: a record below a position and not returned was not
        visible to the reader."""
        seen = self.read.setdefault(reader, {})
        partly = self.partly_read.setdefault(reader, {})
        for partition, offset, value in records:
            self.reads += 1
            self._observe_value((partition, offset), value, f"read by {reader}")
            txn = self.of_value.get(value)
            if txn is None:
                self._violated("ReadNeverWritten", f"{reader} read {value!r} at {partition}/{offset}, never sent")
                continue
            if txn.end != "commit":
                state = "still open" if txn.end is None else "aborted"
                self._violated(
                    "AbortedRead",
                    f"{reader} (read_committed) read {value!r} at partition {partition} offset {offset} at "
                    f"{at_s:.3f}s, a record of transaction {txn.key.label}, {state} (no EndTxn(commit) sent)",
                )
            values = seen.setdefault(txn.key, set())
            values.add(value)
            if len(values) < txn.size:
                partly[txn.key] = None
            else:
                partly.pop(txn.key, None)
        self.positions[reader] = dict(positions)

    def check_torn(self) -> None:
        for reader, keys in self.partly_read.items():
            positions = self.positions.get(reader, {})
            for key in keys:
                txn = self.txns[key]
                got = self.read[reader][key]
                for value, (partition, offset) in sorted(txn.offsets.items(), key=lambda item: item[1]):
                    if value not in got and positions.get(partition, 0) > offset:
                        self._violated(
                            "TornTransaction",
                            f"{reader} (read_committed) returned {len(got)} of the {txn.size} records of committed "
                            f"transaction {key.label} and went past partition {partition} offset {offset} "
                            f"({value!r}) without returning it",
                        )
                        return

    def check_stable(self, leaders: list[LeaderLso], now_s: float) -> None:
        """No leader's LSO past the first offset of a transaction still open."""
        timeout_s = TRANSACTION_TIMEOUT.total_seconds()
        for key in self.latest.values():
            txn = self.txns[key]
            if txn.end is not None or now_s - txn.started_s >= timeout_s:
                continue
            for leader in leaders:
                first = txn.first_offsets.get(leader.partition)
                if first is not None and leader.last_stable_offset > first:
                    self._violated(
                        "OpenTransactionHoldsLastStableOffset",
                        f"broker {leader.broker}, leader of partition {leader.partition}: last stable offset "
                        f"{leader.last_stable_offset} past offset {first}, where open transaction {key.label} "
                        f"(no EndTxn sent) begins",
                    )

    # ---- the end ----

    def unread(self, reader: str) -> list[tuple[int, int]]:
        """The records of acknowledged commits `reader` has not read."""
        seen = self.read.get(reader, {})
        return sorted(
            where
            for txn in self.txns.values()
            if txn.committed
            for value, where in txn.offsets.items()
            if value not in seen.get(txn.key, set())
        )

    def behind(self, reader: str) -> bool:
        """The reader's position is not yet past every record of every ended transaction."""
        positions = self.positions.get(reader, {})
        return any(
            positions.get(partition, 0) <= offset
            for txn in self.txns.values()
            if txn.end is not None
            for partition, offset in txn.offsets.values()
        )

    def check_final(self, readers: list[str]) -> None:
        self.check_torn()
        for reader in readers:
            missing = self.unread(reader)
            if missing:
                self._violated(
                    "NoCommittedRecordLost",
                    f"{reader} (read_committed) never read {len(missing)} record(s) of acknowledged transaction "
                    f"commits, the first partition {missing[0][0]} offset {missing[0][1]}",
                )

    def counts(self) -> dict[str, int]:
        txns = self.txns.values()
        return {
            "committed": sum(t.committed for t in txns),
            "undecided": sum(t.end == "commit" and not t.committed for t in txns),
            "aborted": sum(t.end == "abort" for t in txns),
            "read_committed_records": self.reads,
        }
