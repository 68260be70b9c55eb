# The C record walk's signature (common/_record_walk.c), for the type checker.
from _typeshed import ReadableBuffer

def records_max_timestamp_delta(buffer: ReadableBuffer, start: int, end: int, declared: int, /) -> int | None: ...
