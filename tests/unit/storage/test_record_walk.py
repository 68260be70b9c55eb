"""The C record walk against the Python one: C's "certainly valid" must never pass a batch Python refuses, and it
must pass the batches producers send (else the broker silently runs the slow walk)."""

from __future__ import annotations

import shutil
import sysconfig

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minikafka.common import record_batch
from minikafka.common.record_batch import (
    HEADER_SIZE,
    Header,
    InvalidRecordError,
    Record,
    RecordBatch,
    build_batch,
    check_records,
    check_records_in_python,
    read_header,
)

native_walk = record_batch._native_walk
needs_native = pytest.mark.skipif(native_walk is None, reason="the C record walk is not built (no C compiler)")

# Up to 40 bytes, or over 8 KiB: a length of three varint bytes (made cheaply; the content does not matter)
fields = st.one_of(st.none(), st.binary(max_size=40), st.integers(8100, 9000).map(lambda size: b"x" * size))
records = st.builds(
    Record,
    value=fields,
    key=fields,
    timestamp_ms=st.integers(0, 2**40),
    headers=st.lists(
        st.builds(Header, st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=9))), max_size=3
    ).map(tuple),
)


def python_verdict(batch: RecordBatch) -> str | None:
    """None when the Python walk accepts the batch, else its error and position."""
    try:
        check_records_in_python(batch)
    except InvalidRecordError as error:
        return f"{error.message} at {error.position}"
    return None


def native_verdict(batch: RecordBatch) -> bool:
    return native_max_delta(batch) is not None


def native_max_delta(batch: RecordBatch) -> int | None:
    start = batch.position + HEADER_SIZE
    return native_walk(batch.buffer, start, batch.position + batch.size, batch.records_count)


@needs_native
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(records, min_size=1, max_size=12))
def test_the_c_walk_passes_every_batch_a_producer_builds(batch_records: list[Record]) -> None:
    batch = read_header(build_batch(batch_records))
    assert native_verdict(batch)
    assert python_verdict(batch) is None
    # Both walks find the largest timestamp delta, from which the leader sets the batch's max timestamp.
    largest = max(record.timestamp_ms for record in batch_records)
    assert native_max_delta(batch) == check_records_in_python(batch) == largest - batch.base_timestamp
    assert check_records(batch) == largest


@needs_native
@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(records, min_size=1, max_size=6),
    # where to write which byte: often in the first record's length and small fields, else anywhere
    st.lists(
        st.tuples(st.one_of(st.integers(0, 12), st.integers(0, 2**16)), st.integers(0, 255)), min_size=1, max_size=4
    ),
    st.integers(-2, 2),
    st.sampled_from(["bytes", "bytearray", "memoryview", "inside a larger buffer"]),
)
def test_the_c_walk_never_passes_a_batch_the_python_walk_refuses(
    batch_records: list[Record], flips: list[tuple[int, int]], count_change: int, container: str
) -> None:
    data = bytearray(build_batch(batch_records))
    for where, byte in flips:  # anywhere in the records, or the declared count's low byte
        data[HEADER_SIZE - 1 + where % (len(data) - HEADER_SIZE + 1)] = byte
    data[HEADER_SIZE - 1] = (data[HEADER_SIZE - 1] + count_change) % 256
    buffer = {
        "bytes": bytes(data),
        "bytearray": data,
        "memoryview": memoryview(bytes(data)),
        "inside a larger buffer": b"\x07" * 5 + bytes(data) + bytes(range(256)),
    }[container]
    batch = read_header(buffer, 5 if container == "inside a larger buffer" else 0)
    verdict = python_verdict(batch)
    if native_verdict(batch):
        assert verdict is None, "the C walk passed a batch the Python walk refuses"
    try:  # the two together answer exactly as the Python walk alone
        check_records(batch)
    except InvalidRecordError as error:
        assert verdict == f"{error.message} at {error.position}"
    else:
        assert verdict is None


def batch_of(records_section: bytes, count: int) -> RecordBatch:
    """A batch around a hand-written records section (the header's length and count made to fit)."""
    header = bytearray(build_batch([Record(b"v", None, 0)])[:HEADER_SIZE])
    header[8:12] = (HEADER_SIZE - 12 + len(records_section)).to_bytes(4, "big")
    header[57:61] = count.to_bytes(4, "big")
    return read_header(bytes(header) + records_section)


@needs_native
@pytest.mark.parametrize(
    ("section", "count", "valid"),
    [
        (bytes([14, 0, 0, 0, 1, 2, ord("v"), 0]), 1, True),  # length 7, null key, value "v", no headers
        (bytes([14, 0, 0, 0, 1, 2, ord("v"), 0]), 2, False),  # declares two
        (bytes([14, 0, 0, 2, 1, 2, ord("v"), 0]), 1, False),  # offset delta 1 first
        (bytes([16, 0, 0x80, 0, 0, 1, 2, ord("v"), 0]), 1, True),  # a two-byte timestamp delta of 0
        (bytes([14, 0, 0, 0, 1, 2, ord("v"), 2]), 1, False),  # one header, in no bytes
        (bytes([16, 0, 0, 0, 1, 2, ord("v"), 0, 0]), 1, False),  # a byte past its fields, inside its length
        (bytes([16, 0, 0, 0, 1, 2, ord("v"), 0, 14, 0, 0, 2, 1, 2, ord("v"), 0]), 2, False),  # the same, then one
        (bytes([14, 0, 0, 0, 1, 4, ord("v"), 0]), 1, False),  # value runs past the record
        (bytes([14, 0, 0, 0, 1, 2, ord("v")]), 1, False),  # cut short
        (bytes([14, 0]) + b"\xff" * 10 + bytes([0, 1, 2, ord("v"), 0]), 1, False),  # an 11-byte varint
        (b"", 0, True),
        (b"", 1, False),
    ],
)
def test_hand_written_records(section: bytes, count: int, valid: bool) -> None:
    batch = batch_of(section, count)
    assert native_verdict(batch) is valid
    assert (python_verdict(batch) is None) is valid


@needs_native
def test_spans_outside_the_buffer_are_not_walked() -> None:
    data = build_batch([Record(b"v", None, 0)])
    assert native_walk(data, HEADER_SIZE, len(data), 1) == 0
    assert native_walk(data, HEADER_SIZE, len(data) + 1, 1) is None
    assert native_walk(data, -1, len(data), 1) is None
    assert native_walk(data, len(data), HEADER_SIZE, 1) is None


def test_the_c_walk_is_built_where_a_c_compiler_is() -> None:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}): the Python walk runs alone")
    assert native_walk is not None, "pip install -e . should have built minikafka.common._record_walk (setup.py)"
