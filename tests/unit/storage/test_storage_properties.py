"""Property tests: random operations against an in-memory model; random damage recovered to the longest valid prefix."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from storage_helpers import batch_of, values_read

from minikafka.common.record_batch import iter_batches, read_header
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

CONFIG = LogConfig(segment_bytes=500, index_interval_bytes=120, simulate_page_cache=True)

operation = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 4), st.integers(0, 80)),
    st.tuples(st.just("epoch"), st.integers(0, 0), st.integers(0, 0)),
    st.tuples(st.just("truncate"), st.integers(0, 40), st.integers(0, 0)),
    st.tuples(st.just("flush"), st.integers(0, 0), st.integers(0, 0)),
    st.tuples(st.just("close"), st.integers(0, 0), st.integers(0, 0)),
    st.tuples(st.just("crash"), st.integers(0, 0), st.integers(0, 0)),
)


def model_read(model: list[tuple[int, bytes]], offset: int) -> list[tuple[int, bytes]]:
    return [(o, v) for o, v in model if o >= offset]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(operation, min_size=1, max_size=30), st.data())
def test_random_operations_agree_with_model(operations: list[tuple[str, int, int]], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "p-0"
        log = PartitionLog.open(path, CONFIG, 0)
        model: list[tuple[int, bytes]] = []  # (offset, value) of every record
        durable = 0  # offsets below this survive a crash
        epoch = 1
        for step, (kind, a, b) in enumerate(operations):
            if kind == "append":
                values = [b"%d.%d:" % (step, i) + b"x" * b for i in range(a)]
                info = log.append_as_leader(batch_of(values), epoch, step)
                assert info.first_offset == len(model)
                model += [(len(model) + i, v) for i, v in enumerate(values)]
            elif kind == "epoch":
                epoch += 1
            elif kind == "truncate":
                durable = max(durable, log.segments[-1].base_offset)  # rolled segments were flushed at the roll
                new_end = log.truncate_to(a, "test")
                assert new_end <= max(a, 0) or new_end == len(model)
                model = model[:new_end]
                durable = min(durable, new_end)
            elif kind == "flush":
                log.flush(step)
                durable = len(model)
            elif kind == "close":
                log.close(step)
                durable = len(model)
                log = PartitionLog.open(path, CONFIG, step)
            else:
                # Rolled segments were flushed at the roll; the active one keeps only what was flushed.
                durable = max(durable, log.segments[-1].base_offset)
                assert log.recovery_point == durable
                log.abandon()
                log = PartitionLog.open(path, CONFIG, step)
                model = model[:durable]
            assert log.log_end_offset == len(model)
            if model:
                offset = data.draw(st.integers(0, len(model) - 1))
                got = values_read(log.read(offset, data.draw(st.integers(1, 2000))))
                expected = model_read(model, offset)
                assert got and got[0][0] <= offset
                assert got == [r for r in model if r[0] >= got[0][0]][: len(got)]
                assert got[-1][0] >= expected[0][0]
        everything = []
        offset = 0
        while offset < log.log_end_offset:
            chunk = values_read(log.read(offset, 10**6))
            everything += chunk
            offset = chunk[-1][0] + 1
        assert everything == model
        log.abandon()


def build_damaged_log(path: Path, batches: int) -> tuple[list[bytes], int]:
    config = LogConfig(segment_bytes=1000)
    log = PartitionLog.open(path, config, 0)
    for i in range(batches):
        log.append_as_leader(batch_of([b"r%d-%d" % (i, j) for j in range(1 + i % 3)]), 1 + i // 4, i)
    stored = [b.bytes() for b in iter_batches(b"".join(log.read(s.base_offset, 10**6) for s in log.segments))]
    recovery_point = log.recovery_point  # rolled segments were flushed; the active one was not
    log.abandon()
    return stored, recovery_point


@settings(max_examples=150, deadline=None)
@given(st.integers(3, 30), st.floats(0, 1, exclude_max=True), st.integers(1, 255), st.booleans())
def test_flip_or_cut_recovers_longest_valid_prefix(batches: int, where: float, mask: int, cut: bool) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "p-0"
        stored, recovery_point = build_damaged_log(path, batches)
        files = sorted(path.glob("*.log"))
        starts = []  # (file, position in file, global index) of each batch
        index = 0
        for file in files:
            position = 0
            size = file.stat().st_size
            while position < size:
                starts.append((file, position, index))
                position += len(stored[index])
                index += 1
        # The tail: batches past the recovery point, the only ones recovery scans (and the only ones at risk).
        tail_start = sum(len(s) for s in stored if read_header(s, 0).base_offset < recovery_point)
        total = sum(len(s) for s in stored)
        target = tail_start + int(where * (total - tail_start))
        ends = list(itertools.accumulate(len(batch) for batch in stored))
        damaged_index = next(index for index, end in enumerate(ends) if end > target)
        cumulative = ends[damaged_index] - len(stored[damaged_index])
        file, position, _ = starts[damaged_index]
        inside = target - cumulative
        data = bytearray(file.read_bytes())
        if cut:
            del data[position + inside :]
        else:
            data[position + inside] ^= mask
        file.write_bytes(bytes(data))
        log = PartitionLog.open(path, LogConfig(segment_bytes=1000), 0)
        survivors = stored[:damaged_index]
        served = b""
        offset = 0
        while offset < log.log_end_offset:
            chunk = log.read(offset, 10**6)
            values_read(chunk)  # every served batch passes its CRC
            served += chunk
            offset = list(iter_batches(chunk))[-1].next_offset
        assert served == b"".join(survivors)
        log.abandon()
