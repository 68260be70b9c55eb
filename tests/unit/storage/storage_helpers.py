"""Helpers shared by the storage tests."""

from __future__ import annotations

from common.record_batch import Record, build_batch, iter_batches


def batch_of(values: list[bytes], timestamp_ms: int = 0) -> bytes:
    return build_batch([Record(value, timestamp_ms=timestamp_ms) for value in values])


def values_read(data: bytes) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in `data`, checking each batch's CRC on the way."""
    out = []
    for batch in iter_batches(data):
        assert batch.is_valid(), f"served a corrupt batch at offset {batch.base_offset}"
        out.extend((record.offset, record.value) for record in batch.records())
    return out
