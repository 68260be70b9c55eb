"""What the simulated world's exactly-once pipeline (`exactly_once.py`) must hold, checked over the live run:

- ExactlyOnceOutput (the world's own; its last part a liveness check): the pipeline consumes the input topic in
  its group and writes one output record per input record, in transactions that also commit the consumed offsets
  (TxnOffsetCommit). A read_committed reader of the output then sees each input record's output at most once, at
  every step (a second one is a record processed again after its transaction committed, or an aborted transaction's
  output made visible); and at the end, once the pipeline has caught up, the group's committed offset of each input
  partition is exactly where its outputs end: every input offset below it has its output (no gap: offsets committed
  without their output, e.g. an aborted transaction's), none at or past it (output committed without its offsets).
  An output carries the input's value, which must be the one the input holds at that offset. And the committed
  offsets have reached the input's end.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from minikafka.sim.invariants import Violation

INVARIANT = "ExactlyOnceOutput"


def output_value(partition: int, offset: int, value: bytes) -> bytes:
    """The pipeline's transform: the input record's place and value."""
    return b"eos %d %d " % (partition, offset) + value


def input_of(output: bytes) -> tuple[int, int, bytes] | None:
    """(input partition, input offset, input value) an output value names; None when it is not one."""
    parts = output.split(b" ", 3)
    if len(parts) != 4 or parts[0] != b"eos" or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return int(parts[1]), int(parts[2]), parts[3]


@dataclass
class ExactlyOnceCounts:
    committed: int = 0  # transactions whose commit was acknowledged
    aborted: int = 0  # ended with an abort, on purpose or after a refusal (a fenced member, ...)
    crashes: int = 0  # a worker died mid-transaction (half its batches, or an EndTxn(commit) it never heard back)
    fenced: int = 0  # TxnOffsetCommit refused to a member no longer in the group's generation
    records: int = 0  # input records processed in acknowledged commits


@dataclass
class ExactlyOnceInvariants:
    violations: list[Violation] = field(default_factory=list)
    # input (partition, offset) -> the output (partition, offset) where the reader found its output
    outputs: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    carried: dict[tuple[int, int], bytes] = field(default_factory=dict)  # input (partition, offset) -> value carried
    committed: dict[int, int] = field(default_factory=dict)  # input partition -> highest offset known committed
    positions: dict[int, int] = field(default_factory=dict)  # the reader's next output offset per partition
    counts: ExactlyOnceCounts = field(default_factory=ExactlyOnceCounts)
    reads: int = 0

    def _violated(self, detail: str) -> None:
        if not self.violations:
            self.violations.append(Violation(INVARIANT, detail))

    # ---- what the pipeline's workers saw ----

    def offsets_committed(self, offsets: Mapping[int, int]) -> None:
        """Offsets the group holds committed: a commit acknowledged, or what a (re)joined worker fetched stable."""
        for partition, offset in offsets.items():
            self.committed[partition] = max(self.committed.get(partition, 0), offset)

    # ---- what the read_committed reader of the output saw ----

    def output_polled(self, records: list[tuple[int, int, bytes]], positions: Mapping[int, int]) -> None:
        for partition, offset, value in records:
            self.reads += 1
            named = input_of(value)
            if named is None:
                self._violated(f"output partition {partition} offset {offset} holds {value!r}, no pipeline output")
                continue
            source = named[0], named[1]
            first = self.outputs.setdefault(source, (partition, offset))
            if first != (partition, offset):
                self._violated(
                    f"input partition {source[0]} offset {source[1]} has two committed outputs: partition "
                    f"{first[0]} offset {first[1]} and partition {partition} offset {offset}"
                )
            self.carried.setdefault(source, named[2])
        self.positions = dict(positions)

    # ---- the end ----

    def check_final(
        self,
        committed: Mapping[int, int],
        input_value: Callable[[int, int], bytes | None],
        input_ends: Mapping[int, int] | None = None,
    ) -> None:
        """`committed`: the group's committed offsets once the pipeline stopped (missing: none); `input_value`:
        what the input holds at an offset, when known; `input_ends`: the input's high watermarks, which the
        pipeline had the final read's time to reach."""
        for partition, end in sorted((input_ends or {}).items()):
            if committed.get(partition, 0) < end:
                self._violated(
                    f"the pipeline never caught up: input partition {partition} committed to "
                    f"{committed.get(partition, 0)} of {end}"
                )
        by_partition: dict[int, set[int]] = {}
        for partition, offset in self.outputs:
            by_partition.setdefault(partition, set()).add(offset)
        for partition in sorted({*committed, *by_partition}):
            end, done = committed.get(partition, 0), by_partition.get(partition, set())
            missing = [o for o in range(end) if o not in done]
            beyond = sorted(o for o in done if o >= end)
            if missing:
                self._violated(
                    f"input partition {partition}: {len(missing)} record(s) below the group's committed offset {end} "
                    f"have no committed output, the first offset {missing[0]}"
                )
            if beyond:
                self._violated(
                    f"input partition {partition}: {len(beyond)} record(s) at or past the group's committed offset "
                    f"{end} have a committed output, the first offset {beyond[0]}"
                )
        for (partition, offset), value in sorted(self.carried.items()):
            held = input_value(partition, offset)
            if held is not None and held != value:
                self._violated(f"the output of input partition {partition} offset {offset} carries {value!r}, the "
                               f"input holds {held!r}")  # fmt: skip
                return

    def summary(self) -> dict[str, int]:
        counts = self.counts
        return {
            "committed": counts.committed,
            "aborted": counts.aborted,
            "crashes": counts.crashes,
            "fenced": counts.fenced,
            "records": counts.records,
            "outputs_read": self.reads,
        }
