"""Kafka's CompressionType: the codecs a record batch's records section may be compressed with.

Magic 2 compresses the records section as a whole (every record back to back, no inner wrapping), with the codec
in the low three bits of the batch attributes. Each codec has Kafka's framing:

    1 gzip    a gzip stream
    2 snappy  xerial's framing (magic b"\\x82SNAPPY\\x00", two int32 versions, then chunks of an int32 length
              and a raw snappy block), or one raw snappy block (what librdkafka writes; Java's reader accepts it)
    3 lz4     an LZ4 frame
    4 zstd    a zstd frame

Decompression is bounded: a few compressed bytes may claim to inflate to gigabytes, so output beyond `limit`
bytes is refused (RECORD_LIST_TOO_LARGE) rather than allocated.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from enum import IntEnum

import cramjam

from minikafka.common.errors import ErrorCode, KafkaError


class CompressionType(IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def codec_name(codec: int) -> str:
    """Kafka's name of a codec id, as its tools print it ("none", "gzip", ...; "unknown(5)" beyond them)."""
    try:
        return CompressionType(codec).name.lower()
    except ValueError:
        return f"unknown({codec})"


XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = len(XERIAL_MAGIC) + 8  # magic, then the version and the compatible version (int32 each)
_INT32 = struct.Struct(">i")
# The first output buffer, as a multiple of the compressed size; it doubles (up to the limit) when too small.
_FIRST_RATIO = 8
_FIRST_MIN = 64 * 1024
_OUTPUT_FULL = "failed to write whole buffer"  # cramjam's message when the output buffer is too small


class CorruptCompressedDataError(KafkaError):
    """Compressed bytes that do not decode with their codec (Kafka: CORRUPT_MESSAGE)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.CORRUPT_MESSAGE, message)


def decompress(codec: int, data: bytes | memoryview, limit: int) -> bytes:
    """The records section compressed with `codec`, decompressed; raises UNSUPPORTED_COMPRESSION_TYPE for an
    unknown codec, CORRUPT_MESSAGE for bytes that do not decode, RECORD_LIST_TOO_LARGE beyond `limit` bytes."""
    data = bytes(data)
    if codec == CompressionType.GZIP:
        return _decompress_stream("gzip", cramjam.gzip.decompress_into, data, limit)
    if codec == CompressionType.SNAPPY:
        return _decompress_snappy(data, limit)
    if codec == CompressionType.LZ4:
        return _decompress_stream("lz4", cramjam.lz4.decompress_into, data, limit)
    if codec == CompressionType.ZSTD:
        return _decompress_stream("zstd", cramjam.zstd.decompress_into, data, limit)
    raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression type {codec}")


def _too_large(name: str, limit: int) -> KafkaError:
    return KafkaError(ErrorCode.RECORD_LIST_TOO_LARGE, f"{name} records inflate beyond {limit} bytes")


def _decompress_stream(name: str, decompress_into: Callable[[bytes, bytearray], int], data: bytes, limit: int) -> bytes:
    """A codec whose output size is not known up front: into a buffer that doubles until the limit."""
    size = min(limit, max(_FIRST_MIN, len(data) * _FIRST_RATIO))
    while True:
        output = bytearray(size)
        try:
            written = decompress_into(data, output)
        except cramjam.DecompressionError as error:
            if _OUTPUT_FULL not in str(error):
                raise CorruptCompressedDataError(f"{name} records do not decode: {error}") from None
            if size >= limit:
                raise _too_large(name, limit) from None
            size = min(limit, size * 2)
            continue
        return bytes(memoryview(output)[:written])


def _decompress_snappy(data: bytes, limit: int) -> bytes:
    if not data.startswith(XERIAL_MAGIC):
        return _decompress_snappy_block(data, limit)
    position = _XERIAL_HEADER
    if len(data) < position:
        raise CorruptCompressedDataError("snappy records: truncated xerial header")
    chunks = []
    total = 0
    while position < len(data):
        if position + 4 > len(data):
            raise CorruptCompressedDataError("snappy records: truncated xerial chunk length")
        (length,) = _INT32.unpack_from(data, position)
        position += 4
        if length < 0 or position + length > len(data):
            raise CorruptCompressedDataError(f"snappy records: xerial chunk of {length} bytes runs past the data")
        chunk = _decompress_snappy_block(data[position : position + length], limit - total)
        chunks.append(chunk)
        total += len(chunk)
        position += length
    return b"".join(chunks)


def _decompress_snappy_block(block: bytes, limit: int) -> bytes:
    """One raw snappy block: its uncompressed length leads it, so the bound is checked before allocating."""
    try:
        length = cramjam.snappy.decompress_raw_len(block)
        if length > limit:
            raise _too_large("snappy", limit)
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as error:
        raise CorruptCompressedDataError(f"snappy records do not decode: {error}") from None
