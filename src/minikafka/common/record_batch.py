"""Kafka's record batch format v2 (magic 2): the bytes producers send, brokers store and consumers read.

Layout of a batch (big-endian):

    base_offset int64 | batch_length int32 | partition_leader_epoch int32 | magic int8 | crc uint32 |
    attributes int16 | last_offset_delta int32 | base_timestamp int64 | max_timestamp int64 | producer_id int64 |
    producer_epoch int16 | base_sequence int32 | records_count int32 | records...

`batch_length` counts the bytes after itself; the CRC-32C covers attributes to the end. The base offset and
the partition leader epoch are outside the CRC, so a broker assigns offsets and stamps its epoch by rewriting
those two fields in place, never re-encoding records. Each record: length varint | attributes int8 |
timestamp_delta varlong | offset_delta varint | key_length varint | key | value_length varint | value |
headers_count varint | headers (key_length varint, key, value_length varint, value).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

import crc32c as _crc32c

from minikafka.common.compression import compress, decompress
from minikafka.common.errors import ErrorCode, KafkaError


def _load_native_walk() -> Callable[[bytes | bytearray | memoryview, int, int, int], int | None] | None:
    try:
        from minikafka.common._record_walk import records_max_timestamp_delta
    except ImportError:  # installed where no C compiler was found, or a stale build: the Python walk alone
        return None
    return records_max_timestamp_delta


_native_walk = _load_native_walk()

MAGIC = 2
LOG_OVERHEAD = 12  # base_offset + batch_length: the bytes not counted in batch_length
HEADER_SIZE = 61
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1  # Kafka's RecordBatch.NO_TIMESTAMP

_BASE_OFFSET = 0
_LENGTH = 8
_PARTITION_LEADER_EPOCH = 12
_MAGIC = 16
_CRC = 17
_ATTRIBUTES = 21
_RECORDS_COUNT = 57

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT64 = struct.Struct(">q")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08  # set: LogAppendTime, which only a broker may choose
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
# Set by the log cleaner (KIP-534): the base timestamp is the batch's delete horizon, when its tombstones or its
# transaction marker may go; record timestamps stay exact (their deltas are from it).
DELETE_HORIZON_FLAG = 0x40
NO_PRODUCER_ID = -1
# How far a compressed batch a reader decodes may inflate: readers know no message.max.bytes, so a fixed bound,
# four times what a broker with the default message.max.bytes lets a batch inflate to.
READER_INFLATION_LIMIT = 256 * 1024 * 1024


class CorruptRecordError(KafkaError):
    """A batch failed its CRC or structure checks (Kafka's CORRUPT_MESSAGE)."""

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__(ErrorCode.CORRUPT_MESSAGE, message)
        self.position = position


@dataclass(frozen=True)
class RecordError:
    """One record a Produce refused, by its index in the batch (Kafka's ProduceResponse RecordError)."""

    batch_index: int
    message: str


class InvalidRecordError(KafkaError):
    """A batch whose header disagrees with its records, or that its sender may not write (Kafka's
    INVALID_RECORD); `record_errors` names the records at fault when the batch itself is sound, as Kafka's
    Produce answers them, so that a client fails those records and may send the others again. `code` is another
    error such records get: INVALID_TIMESTAMP for timestamps out of range."""

    def __init__(
        self,
        message: str,
        position: int = 0,
        record_errors: tuple[RecordError, ...] = (),
        code: ErrorCode = ErrorCode.INVALID_RECORD,
    ) -> None:
        super().__init__(code, message)
        self.position = position
        self.record_errors = record_errors


def refused_records_message(errors: tuple[RecordError, ...]) -> str:
    """Kafka's message for a Produce whose records were refused one by one (its RecordValidationException)."""
    shown = ", ".join(f"RecordError(batchIndex={e.batch_index}, message='{e.message}')" for e in errors[:3])
    return (
        f"One or more records have been rejected due to {len(errors)} record errors in total, and only showing "
        f"the first three errors at most: [{shown}]"
    )


def crc32c(data: bytes | bytearray | memoryview) -> int:
    return _crc32c.crc32c(data)


# ---- varints (zigzag, as Kafka's ByteUtils) ----


def _encode_varint(value: int) -> bytes:
    zigzag = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


# -1 (null) to 4094: the lengths and deltas of ordinary records, looked up instead of encoded (a producer encodes
# five varints per record; the table is 4096 small bytes objects, about 176 KB with the tuple).
_SMALL_VARINTS = tuple(_encode_varint(value) for value in range(-1, 4095))


def _varint(value: int) -> bytes:
    """The zigzag varint of `value`, as Kafka's ByteUtils writes it."""
    if -1 <= value < 4095:
        return _SMALL_VARINTS[value + 1]
    return _encode_varint(value)


def _read_varint(data: bytes | memoryview, position: int, limit: int) -> tuple[int, int]:
    shift = 0
    raw = 0
    while True:
        if position >= limit:
            raise CorruptRecordError("varint runs past the end of the batch", position)
        byte = data[position]
        position += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint longer than 10 bytes", position)
    return (raw >> 1) ^ -(raw & 1), position


# ---- records ----


@dataclass(frozen=True)
class Header:
    key: str
    value: bytes | None


@dataclass(frozen=True)
class Record:
    """A record as a producer gives it (offset and timestamp are filled in when read back)."""

    value: bytes | None
    key: bytes | None = None
    timestamp_ms: int = 0
    headers: tuple[Header, ...] = field(default_factory=tuple)
    offset: int = -1


class RecordLike(Protocol):
    """What a batch is encoded from: a `Record`, or a producer's pending record (no copy into a `Record` first)."""

    @property
    def value(self) -> bytes | None: ...
    @property
    def key(self) -> bytes | None: ...
    @property
    def timestamp_ms(self) -> int: ...
    @property
    def headers(self) -> Sequence[Header]: ...


_NULL = _varint(-1)
_NO_HEADERS = _varint(0)


def _encode_record(out: bytearray, record: RecordLike, offset_delta: int, base_timestamp: int) -> None:
    # Once per record in every producer: whole fields joined, no per-byte appends.
    key, value = record.key, record.value
    body = b"".join(
        (
            b"\x00",  # record attributes: unused in v2
            _varint(record.timestamp_ms - base_timestamp),
            _varint(offset_delta),
            _NULL if key is None else _varint(len(key)),
            key or b"",
            _NULL if value is None else _varint(len(value)),
            value or b"",
            _encode_headers(record.headers) if record.headers else _NO_HEADERS,
        )
    )
    out += _varint(len(body))
    out += body


def _encode_headers(headers: Sequence[Header]) -> bytes:
    out = bytearray(_varint(len(headers)))
    for header in headers:
        name = header.key.encode()
        out += _varint(len(name)) + name
        out += _NULL if header.value is None else _varint(len(header.value)) + header.value
    return bytes(out)


def build_batch(
    records: Sequence[RecordLike],
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    attributes: int = 0,
    compression: int = 0,
    compression_level: int | None = None,
) -> bytes:
    """Encode one batch, its records compressed with `compression` (a codec id; 0: none) at `compression_level`
    (None: the codec's default); offsets are relative to `base_offset`, which the broker may rewrite."""
    if not records:
        raise ValueError("a record batch holds at least one record")
    base_timestamp = records[0].timestamp_ms
    max_timestamp = max(record.timestamp_ms for record in records)
    body = bytearray()
    for delta, record in enumerate(records):
        _encode_record(body, record, delta, base_timestamp)
    if compression:
        body = bytearray(compress(compression, bytes(body), compression_level))
        attributes = (attributes & ~COMPRESSION_MASK) | compression
    after_crc = bytearray(HEADER_SIZE - _ATTRIBUTES)
    struct.pack_into(
        ">hiqqqhii",
        after_crc,
        0,
        attributes,
        len(records) - 1,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    after_crc += body
    batch = bytearray(_ATTRIBUTES)
    struct.pack_into(
        ">qiibI",
        batch,
        0,
        base_offset,
        len(after_crc) + _ATTRIBUTES - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC,
        crc32c(after_crc),
    )
    batch += after_crc
    return bytes(batch)


def rebuild_batch(original: RecordBatch, records: Sequence[Record], delete_horizon_ms: int | None = None) -> bytes:
    """`original` holding only `records` (each with its offset), as Kafka's log cleaner rewrites a batch: its base
    and last offsets, leader epoch, producer fields and transactional/control flags stay, so producer state and
    offsets survive; the records keep their offsets (gaps where others were removed), compressed with the
    original's codec. None left: an empty batch, uncompressed (Kafka's empty batch header). `delete_horizon_ms`:
    marked with that delete horizon, as Kafka's cleaner marks a batch whose tombstones or marker may go later."""
    base_timestamp = records[0].timestamp_ms if records else original.max_timestamp
    attributes = original.attributes
    horizon = delete_horizon_ms if delete_horizon_ms is not None else original.delete_horizon_ms
    if horizon is not None:  # once set, a batch's horizon stays (Kafka's)
        base_timestamp, attributes = horizon, attributes | DELETE_HORIZON_FLAG
    max_timestamp = original.max_timestamp
    if records and not original.has_log_append_time:
        max_timestamp = max(record.timestamp_ms for record in records)
    body = bytearray()
    for record in records:
        _encode_record(body, record, record.offset - original.base_offset, base_timestamp)
    codec = original.compression_type if records else 0
    if codec:
        body = bytearray(compress(codec, bytes(body)))
    after_crc = bytearray(HEADER_SIZE - _ATTRIBUTES)
    struct.pack_into(
        ">hiqqqhii",
        after_crc,
        0,
        (attributes & ~COMPRESSION_MASK) | codec,
        original.last_offset_delta,
        base_timestamp,
        max_timestamp,
        original.producer_id,
        original.producer_epoch,
        original.base_sequence,
        len(records),
    )
    after_crc += body
    batch = bytearray(_ATTRIBUTES)
    struct.pack_into(
        ">qiibI",
        batch,
        0,
        original.base_offset,
        len(after_crc) + _ATTRIBUTES - LOG_OVERHEAD,
        original.partition_leader_epoch,
        MAGIC,
        crc32c(after_crc),
    )
    return bytes(batch + after_crc)


# ---- reading ----


@dataclass(frozen=True)
class RecordBatch:
    """A view of one batch inside a buffer; decoding records is on demand."""

    buffer: bytes | memoryview
    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def compression_type(self) -> int:
        """Kafka's codec id: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_MASK

    @property
    def has_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_FLAG)

    def timestamp_of(self, record: Record) -> int:
        """A record's timestamp as readers take it: with LogAppendTime, the batch's max timestamp (the leader's
        clock) stands for every record's, as Kafka's DefaultRecordBatch answers."""
        return self.max_timestamp if self.has_log_append_time else record.timestamp_ms

    @property
    def delete_horizon_ms(self) -> int | None:
        """When the cleaner may remove this batch's tombstones or marker (KIP-534); None: not set yet."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_FLAG else None

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > NO_PRODUCER_ID

    def bytes(self) -> bytes:
        return bytes(self.buffer[self.position : self.position + self.size])

    def computed_crc(self) -> int:
        return crc32c(memoryview(self.buffer)[self.position + _ATTRIBUTES : self.position + self.size])

    def is_valid(self) -> bool:
        return self.computed_crc() == self.crc

    def inflated(self, limit: int) -> RecordBatch:
        """This batch with its records section decompressed (the same header, compression bits and CRC kept: its
        CRC no longer matches), for the record walkers; raises KafkaError when it does not decode."""
        start = self.position + HEADER_SIZE
        records = decompress(self.compression_type, memoryview(self.buffer)[start : self.position + self.size], limit)
        header = bytes(self.buffer[self.position : start])
        return replace(
            self, buffer=header + records, position=0, batch_length=HEADER_SIZE - LOG_OVERHEAD + len(records)
        )

    def records(self) -> Iterator[Record]:
        """Decode every record (consumers and tools only: the broker never needs this)."""
        batch = self.inflated(READER_INFLATION_LIMIT) if self.compression_type else self
        return batch._walk_records()

    def stored_records(self) -> Iterator[Record]:
        """The records as they are in the buffer, not inflated (an `inflated` batch, or an uncompressed one)."""
        return self._walk_records()

    def _walk_records(self) -> Iterator[Record]:
        """The records section as it is in the buffer (an inflated batch keeps its compression bits)."""
        data = self.buffer
        position = self.position + HEADER_SIZE
        end = self.position + self.size
        for _ in range(self.records_count):
            length, position = _read_varint(data, position, end)
            record_end = position + length
            if length < 0 or record_end > end:
                raise CorruptRecordError(f"record length {length} runs past the batch", position)
            position += 1  # attributes
            timestamp_delta, position = _read_varint(data, position, record_end)
            offset_delta, position = _read_varint(data, position, record_end)
            key, position = _read_bytes(data, position, record_end)
            value, position = _read_bytes(data, position, record_end)
            header_count, position = _read_varint(data, position, record_end)
            headers = []
            for _header in range(header_count):
                header_key, position = _read_bytes(data, position, record_end)
                header_value, position = _read_bytes(data, position, record_end)
                headers.append(Header((header_key or b"").decode("utf-8", "replace"), header_value))
            if position != record_end:
                raise CorruptRecordError("record length does not match its fields", position)
            yield Record(
                value, key, self.base_timestamp + timestamp_delta, tuple(headers), self.base_offset + offset_delta
            )
        if position != end:
            raise CorruptRecordError("records do not fill the batch", position)


# The smallest record body: attributes, then one-byte timestamp delta, offset delta, key length, value length and
# header count.
_MIN_RECORD_BODY = 6


def check_records(batch: RecordBatch) -> int:
    """Walk every record's fields without copying keys or values (as Kafka's DefaultRecord.readFrom reads them):
    the records must fill the batch exactly, number `records_count` and carry offset deltas 0, 1, 2, ... in turn.
    Raises InvalidRecordError. Steps by record, not by declared count, so a huge count costs nothing. Returns the
    largest record timestamp, as Kafka's LogValidator computes it: NO_TIMESTAMP (-1) unless a record's is larger.

    Every producer's batch gets this walk at the leader, so the C walk goes first; it answers only "certainly
    valid", and anything else is walked in Python, which gives the exact error."""
    start, end = batch.position + HEADER_SIZE, batch.position + batch.size
    delta = None if _native_walk is None else _native_walk(batch.buffer, start, end, batch.records_count)
    if delta is None:
        delta = check_records_in_python(batch)
    if batch.records_count == 0:
        return NO_TIMESTAMP
    return max(NO_TIMESTAMP, _int64(batch.base_timestamp + delta))


def _int64(value: int) -> int:
    """Java's long arithmetic: a sum past 64 bits wraps (only a crafted base timestamp and delta get there)."""
    return (value + 2**63) % 2**64 - 2**63


def check_records_in_python(batch: RecordBatch) -> int:
    """`check_records` without the C walk: the reference, and the fallback where no C compiler built it. Returns
    the largest record timestamp delta (no records: -2**63), as the C walk does.

    One loop with no call per record: varints of one byte (short fields) and two (deltas and lengths below
    8 KiB) are decoded inline, longer ones by `_field_varint`. A field may be read past its record's end (never
    past the buffer's: IndexError, caught below); the check that the record ends where its length says refuses
    such a record."""
    data = batch.buffer
    position = batch.position + HEADER_SIZE
    end = batch.position + batch.size
    declared = batch.records_count
    found = 0
    start = position
    max_delta = -(2**63)
    try:
        while position < end:
            if found == declared:
                raise InvalidRecordError(f"records_count {declared}, but the batch holds more records", position)
            start = position
            # length
            first = data[position]
            if first < 0x80:
                length = (first >> 1) ^ -(first & 1)
                position += 1
            else:
                second = data[position + 1]
                if second < 0x80:
                    raw = (first & 0x7F) | (second << 7)
                    length = (raw >> 1) ^ -(raw & 1)
                    position += 2
                else:
                    length, position = _field_varint(data, position, end)
            record_end = position + length
            if length < _MIN_RECORD_BODY or record_end > end:
                raise InvalidRecordError(f"record length {length} does not fit the batch", start)
            # attributes (skipped), then the timestamp delta
            first = data[position + 1]
            if first < 0x80:
                timestamp_delta = (first >> 1) ^ -(first & 1)
                position += 2
            else:
                timestamp_delta, position = _field_varint(data, position + 1, end)
            if timestamp_delta > max_delta:
                max_delta = timestamp_delta
            # offset delta, compared zigzag-encoded: `found` (never negative) encodes as twice itself
            first = data[position]
            if first < 0x80:
                raw = first
                position += 1
            else:
                second = data[position + 1]
                if second < 0x80:
                    raw = (first & 0x7F) | (second << 7)
                    position += 2
                else:
                    delta, position = _field_varint(data, position, end)
                    raw = delta << 1 if delta >= 0 else -1
            if raw != found << 1:
                delta = (raw >> 1) ^ -(raw & 1) if raw >= 0 else delta
                raise InvalidRecordError(f"record offset delta {delta}, expected {found}", start)
            # key, then value: a length, then its bytes (none when negative: null); unrolled, it is hot. A zigzag
            # varint is odd when negative, so an even one is twice the length to skip
            first = data[position]
            if first < 0x80:
                position += 1 if first & 1 else 1 + (first >> 1)
            else:
                second = data[position + 1]
                if second < 0x80:
                    raw = (first & 0x7F) | (second << 7)
                    position += 2 if raw & 1 else 2 + (raw >> 1)
                else:
                    field_length, position = _field_varint(data, position, end)
                    if field_length > 0:
                        position += field_length
            first = data[position]
            if first < 0x80:
                position += 1 if first & 1 else 1 + (first >> 1)
            else:
                second = data[position + 1]
                if second < 0x80:
                    raw = (first & 0x7F) | (second << 7)
                    position += 2 if raw & 1 else 2 + (raw >> 1)
                else:
                    field_length, position = _field_varint(data, position, end)
                    if field_length > 0:
                        position += field_length
            # headers
            if data[position] == 0:  # no headers, the usual case
                position += 1
            else:
                headers, position = _field_varint(data, position, end)
                if headers:
                    position = _skip_headers(data, position, record_end, headers)
            if position != record_end:
                raise InvalidRecordError(f"record of {length} bytes does not match its fields", start)
            found += 1
    except IndexError:  # a field ran past the buffer: the lengths are wrong
        raise InvalidRecordError("a record runs past the end of the batch", position) from None
    if found != declared:
        raise InvalidRecordError(f"records_count {declared}, but the batch holds {found} records", position)
    return max_delta


def _skip_headers(data: bytes | memoryview, position: int, record_end: int, headers: int) -> int:
    if headers < 0 or headers * 2 > record_end - position:  # a header takes two bytes at least
        raise InvalidRecordError(f"invalid number of record headers {headers}", position)
    for _header in range(headers):
        key_length, position = _field_varint(data, position, record_end)
        if key_length < 0:
            raise InvalidRecordError(f"negative header key length {key_length}", position)
        value_length, position = _field_varint(data, position + key_length, record_end)
        if value_length > 0:
            position += value_length
    return position


def _field_varint(data: bytes | memoryview, position: int, limit: int) -> tuple[int, int]:
    try:
        return _read_varint(data, position, limit)
    except CorruptRecordError as error:  # inside a CRC-valid batch: the sender wrote a bad record
        raise InvalidRecordError(f"invalid record structure: {error.message}", error.position) from None


def _read_bytes(data: bytes | memoryview, position: int, limit: int) -> tuple[bytes | None, int]:
    length, position = _read_varint(data, position, limit)
    if length < 0:
        return None, position
    if position + length > limit:
        raise CorruptRecordError("field runs past the record", position)
    return bytes(data[position : position + length]), position + length


def read_header(
    buffer: bytes | memoryview, position: int = 0, require_body: bool = True, check_counts: bool = True
) -> RecordBatch:
    """The batch starting at `position`; raises CorruptRecordError when its header is short or impossible, or
    (with `require_body`) when the buffer ends before the batch does, or (with `check_counts`) when its record
    count or last offset delta is negative."""
    available = len(buffer) - position
    if available < HEADER_SIZE:
        raise CorruptRecordError(f"truncated batch header ({available} of {HEADER_SIZE} bytes)", position)
    batch = object.__new__(RecordBatch)  # the frozen __init__'s fifteen object.__setattr__ calls cost 3 times this
    fields = batch.__dict__
    fields["buffer"] = buffer
    fields["position"] = position
    (
        fields["base_offset"],
        fields["batch_length"],
        fields["partition_leader_epoch"],
        fields["magic"],
        fields["crc"],
        fields["attributes"],
        fields["last_offset_delta"],
        fields["base_timestamp"],
        fields["max_timestamp"],
        fields["producer_id"],
        fields["producer_epoch"],
        fields["base_sequence"],
        fields["records_count"],
    ) = _HEADER.unpack_from(buffer, position)
    if batch.magic != MAGIC:
        raise CorruptRecordError(f"unsupported magic {batch.magic} (expected {MAGIC})", position)
    if batch.batch_length < HEADER_SIZE - LOG_OVERHEAD:
        raise CorruptRecordError(f"batch length {batch.batch_length} is shorter than a header", position)
    if require_body and batch.size > available:
        raise CorruptRecordError(f"truncated batch ({available} of {batch.size} bytes)", position)
    if check_counts and (batch.records_count < 0 or batch.last_offset_delta < 0):
        raise CorruptRecordError("negative record count or offset delta", position)
    return batch


def iter_batches(buffer: bytes | memoryview) -> Iterator[RecordBatch]:
    """Every batch in `buffer`, headers checked (not CRCs); a torn trailing batch raises CorruptRecordError."""
    position = 0
    end = len(buffer)
    while position < end:
        batch = read_header(buffer, position)
        yield batch
        position += batch.size


def valid_prefix(buffer: bytes | memoryview) -> tuple[list[RecordBatch], int]:
    """The longest prefix of whole, CRC-valid batches (recovery's rule) and its length in bytes."""
    batches: list[RecordBatch] = []
    position = 0
    end = len(buffer)
    while position < end:
        try:
            batch = read_header(buffer, position)
        except CorruptRecordError:
            break
        if not batch.is_valid():
            break
        batches.append(batch)
        position += batch.size
    return batches, position


def set_base_offset(buffer: bytearray, position: int, base_offset: int) -> None:
    _INT64.pack_into(buffer, position + _BASE_OFFSET, base_offset)


def set_partition_leader_epoch(buffer: bytearray, position: int, epoch: int) -> None:
    _INT32.pack_into(buffer, position + _PARTITION_LEADER_EPOCH, epoch)


_OFFSET_AND_LENGTH = struct.Struct(">qi")
_MAX_TIMESTAMP = 35


def with_max_timestamp(batch: RecordBatch, max_timestamp: int, log_append_time: bool = False) -> RecordBatch:
    """A copy of the batch with its header's max timestamp set and its CRC made again (the field is inside the
    CRC), as Kafka's DefaultRecordBatch.setMaxTimestamp; the records are not touched. `log_append_time` also sets
    the timestamp type to LogAppendTime: a reader then takes the max timestamp as every record's."""
    data = bytearray(batch.buffer[batch.position : batch.position + batch.size])
    _INT64.pack_into(data, _MAX_TIMESTAMP, max_timestamp)
    if log_append_time:
        _INT16.pack_into(data, _ATTRIBUTES, batch.attributes | TIMESTAMP_TYPE_FLAG)
    struct.pack_into(">I", data, _CRC, crc32c(memoryview(data)[_ATTRIBUTES:]))
    return read_header(bytes(data))


def stamped(batch: RecordBatch, base_offset: int, partition_leader_epoch: int) -> bytes:
    """The batch's bytes with its base offset and partition leader epoch rewritten (both outside the CRC), made
    in one copy: a bytearray patched in place would cost a second one when the segment keeps the append as bytes."""
    start = batch.position
    view = memoryview(batch.buffer)
    fields = _OFFSET_AND_LENGTH.pack(base_offset, batch.batch_length) + _INT32.pack(partition_leader_epoch)
    return b"".join((fields, view[start + _PARTITION_LEADER_EPOCH + 4 : start + batch.size]))
