"""Checks a request body's lengths against the bytes it has before kio decodes it.

kio's native reader reserves memory for an array's declared element count before reading the elements; a forged
count of two billion makes it abort the whole process (an allocation failure, not an exception). Here every array,
string and byte length is walked along the request's schema and must fit in what remains of the frame."""

from __future__ import annotations

import dataclasses
import struct
from typing import TYPE_CHECKING, Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    is_optional,
)

if TYPE_CHECKING:
    from kio.static.protocol import Entity

FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}


class LengthError(ValueError):
    """A declared length the frame cannot hold."""


class _Cursor:
    def __init__(self, data: bytes | memoryview, position: int, end: int) -> None:
        self.data = data
        self.position = position
        self.end = end

    def take(self, size: int) -> int:
        """Skip `size` bytes; returns where they started."""
        if size < 0 or self.position + size > self.end:
            raise LengthError(f"{size} bytes declared at offset {self.position}, {self.end - self.position} left")
        start = self.position
        self.position += size
        return start

    def signed(self, size: int) -> int:
        start = self.take(size)
        return struct.unpack_from({2: ">h", 4: ">i"}[size], self.data, start)[0]

    def uvarint(self) -> int:
        value = 0
        for shift in range(0, 35, 7):
            byte = self.data[self.take(1)]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
        raise LengthError(f"unsigned varint longer than 5 bytes at offset {self.position}")

    def count(self, flexible: bool, per_item: int) -> int:
        """An array's element count (-1: null), each element needing at least `per_item` bytes."""
        count = self.uvarint() - 1 if flexible else self.signed(4)
        if count * per_item > self.end - self.position:
            raise LengthError(f"array of {count} declared at offset {self.position}, {self.end - self.position} left")
        return count


def check_entity(data: bytes | memoryview, offset: int, entity_type: type[Entity]) -> None:
    """Raises LengthError if any length in the entity at `offset` overruns `data`."""
    _entity(_Cursor(data, offset, len(data)), entity_type)


def _entity(cursor: _Cursor, entity_type: type[Entity]) -> None:
    flexible = entity_type.__flexible__
    tagged: dict[int, dataclasses.Field[Any]] = {}
    for field in dataclasses.fields(entity_type):
        tag = get_field_tag(field)
        if tag is not None:
            tagged[tag] = field
        else:
            _field(cursor, field, flexible)
    if not flexible:
        return
    for _ in range(cursor.uvarint()):
        sent_tag, size = cursor.uvarint(), cursor.uvarint()
        start = cursor.take(size)
        if sent_tag in tagged:
            _field(_Cursor(cursor.data, start, start + size), tagged[sent_tag], flexible)


def _field(cursor: _Cursor, field: dataclasses.Field[Any], flexible: bool) -> None:
    kind = classify_field(field)
    kafka_type = field.metadata.get("kafka_type", "")
    if isinstance(kind, EntityTupleField):
        for _ in range(max(cursor.count(flexible, 1), 0)):
            _entity(cursor, kind.type_)
    elif isinstance(kind, PrimitiveTupleField):
        item_size = FIXED_SIZES.get(kafka_type, 1)
        for _ in range(max(cursor.count(flexible, item_size), 0)):
            _primitive(cursor, kafka_type, flexible)
    elif isinstance(kind, EntityField):
        if is_optional(field) and cursor.data[cursor.take(1)] == 0xFF:
            return  # a null struct: its -1 marker
        _entity(cursor, kind.type_)
    else:
        _primitive(cursor, kafka_type, flexible)


def _primitive(cursor: _Cursor, kafka_type: str, flexible: bool) -> None:
    if kafka_type in FIXED_SIZES:
        cursor.take(FIXED_SIZES[kafka_type])
        return
    if kafka_type == "string":
        length = cursor.uvarint() - 1 if flexible else cursor.signed(2)
    elif kafka_type in ("bytes", "records"):
        length = cursor.uvarint() - 1 if flexible else cursor.signed(4)
    else:
        raise LengthError(f"unknown field type {kafka_type!r}")
    if length >= 0:
        cursor.take(length)
