"""Building kio entities of any version from one set of values: each API version has its own generated classes
with its own fields, so values a version lacks are dropped and plain ints become the types kio writes."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import sys
from typing import Any

from kio.schema.errors import ErrorCode as WireErrorCode

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@functools.cache
def _field_kinds(cls: type) -> dict[str, str]:
    return {f.name: f.metadata.get("kafka_type", "") for f in dataclasses.fields(cls)}


def build(cls: type, **values: Any) -> Any:
    """An instance of `cls` from the values it has fields for (the others belong to other versions)."""
    kinds = _field_kinds(cls)
    kept = {}
    for name, value in values.items():
        kind = kinds.get(name)
        if kind is None:
            continue
        if kind == "error_code":
            value = WireErrorCode(int(value))
        elif kind == "timedelta_i32":
            value = datetime.timedelta(milliseconds=value)
        elif kind == "datetime_i64" and isinstance(value, int):
            value = None if value < 0 else _EPOCH + datetime.timedelta(milliseconds=value)  # -1: none, as Kafka's
        kept[name] = value
    return cls(**kept)


def sibling(cls: type, name: str) -> type:
    """A nested entity class of the same API version as `cls` (e.g. a response's partition entry)."""
    return getattr(sys.modules[cls.__module__], name)


def has_field(cls: type, name: str) -> bool:
    return name in _field_kinds(cls)
