"""The metadata snapshot format: the image's records (`MetadataImage.to_records`), encoded and length-prefixed."""

from __future__ import annotations

from collections.abc import Sequence

from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import Record, decode_record, encode_record


def encode_snapshot(records: Sequence[Record]) -> bytes:
    encoded = [encode_record(record) for record in records]
    return b"".join(len(item).to_bytes(4, "big") + item for item in encoded)


def decode_snapshot(data: bytes) -> list[Record]:
    records, position = [], 0
    while position < len(data):
        length = int.from_bytes(data[position : position + 4], "big")
        records.append(decode_record(data[position + 4 : position + 4 + length]))
        position += 4 + length
    return records


def image_from_snapshot(data: bytes, end_offset: int) -> MetadataImage:
    """The image holding every record below `end_offset`."""
    return MetadataImage.from_records(decode_snapshot(data), end_offset - 1)
