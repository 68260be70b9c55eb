"""Kafka's CompressionType: the codecs a record batch's records section may be compressed with.

Magic 2 compresses the records section as a whole (every record back to back, no inner wrapping), with the codec
in the low three bits of the batch attributes. Each codec has Kafka's framing:

    1 gzip    a gzip stream
    2 snappy  xerial's framing (magic b"\\x82SNAPPY\\x00", two int32 versions, then chunks of an int32 length
              and a raw snappy block), or one raw snappy block (what librdkafka writes; Java's reader accepts it)
    3 lz4     an LZ4 frame
    4 zstd    a zstd frame

Decompression is bounded: a few compressed bytes may claim to inflate to gigabytes, so output beyond `limit`
bytes is refused (RECORD_LIST_TOO_LARGE) rather than allocated. Compression (a leader recompressing to a topic's
compression.type) writes each codec as Kafka's Java producer does: snappy in xerial's framing.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
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


# Kafka's compression.type values (topic and broker): a codec, or "producer" (keep the batch's own).
PRODUCER_COMPRESSION = "producer"
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", PRODUCER_COMPRESSION)


@dataclass(frozen=True)
class CompressionLevels:
    """A codec's levels (KIP-390's compression.<codec>.level): the range Kafka accepts and its default."""

    config: str  # the topic and broker config naming it
    minimum: int
    maximum: int
    default: int
    default_outside_range: bool = False  # gzip's -1 (zlib's default) is accepted besides 1..9

    def problem(self, level: int) -> str | None:
        """Why Kafka refuses `level` for this codec (its validator's message), or None."""
        if self.default_outside_range:
            ok = self.minimum <= level <= self.maximum or level == self.default
            return None if ok else f"Value must be between {self.minimum} and {self.maximum} or equal to {self.default}"
        if level < self.minimum:
            return f"Value must be at least {self.minimum}"
        return None if level <= self.maximum else f"Value must be no more than {self.maximum}"


# Kafka's GzipCompression (zlib's levels; -1 its default, 6), Lz4Compression (lz4-java's high compressor's levels;
# the default is the fast compressor) and ZstdCompression (zstd's levels, negative ones the fast modes).
GZIP_LEVEL = CompressionLevels("compression.gzip.level", 1, 9, -1, default_outside_range=True)
LZ4_LEVEL = CompressionLevels("compression.lz4.level", 1, 17, 9)
ZSTD_LEVEL = CompressionLevels("compression.zstd.level", -131072, 22, 3)
LEVELS = {CompressionType.GZIP: GZIP_LEVEL, CompressionType.LZ4: LZ4_LEVEL, CompressionType.ZSTD: ZSTD_LEVEL}
_ZLIB_DEFAULT_LEVEL = 6


def _lz4_header() -> bytes:
    return _LZ4_MAGIC + _LZ4_DESCRIPTOR + bytes(((_xxh32_short(_LZ4_DESCRIPTOR) >> 8) & 0xFF,))


def target_codec(compression_type: str) -> CompressionType | None:
    """The codec a compression.type value asks for; None for "producer" (Kafka's BrokerCompressionType)."""
    if compression_type == PRODUCER_COMPRESSION:
        return None
    if compression_type == "uncompressed":
        return CompressionType.NONE
    return CompressionType[compression_type.upper()]


XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = len(XERIAL_MAGIC) + 8  # magic, then the version and the compatible version (int32 each)
_INT32 = struct.Struct(">i")
_XERIAL_VERSIONS = _INT32.pack(1) + _INT32.pack(1)  # the version and the compatible version Java writes
_XERIAL_BLOCK = 32 * 1024  # xerial's default block size, which Kafka's producer uses
_LE_INT32 = struct.Struct("<I")
_XXH_PRIME1, _XXH_PRIME2, _XXH_PRIME3, _XXH_PRIME4, _XXH_PRIME5 = (
    2654435761,
    2246822519,
    3266489917,
    668265263,
    374761393,
)
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_DESCRIPTOR = bytes((0x60, 0x40))  # version 01, independent blocks, no checksums; blocks of at most 64 KiB
_LZ4_BLOCK = 64 * 1024
_LZ4_UNCOMPRESSED = 0x80000000  # a block size's high bit: the block is stored as is
_LZ4_CONTENT_SIZE, _LZ4_DICT_ID = 0x08, 0x01  # frame descriptor flags adding fields before its header checksum
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


def compress(codec: int, data: bytes, level: int | None = None) -> bytes:
    """`data` (a batch's records section) compressed with `codec` in Kafka's framing, at `level` (None: Kafka's
    default for the codec; snappy has none)."""
    if codec == CompressionType.GZIP:
        level = GZIP_LEVEL.default if level is None else level
        return bytes(cramjam.gzip.compress(data, level=_ZLIB_DEFAULT_LEVEL if level == GZIP_LEVEL.default else level))
    if codec == CompressionType.SNAPPY:
        blocks = (data[i : i + _XERIAL_BLOCK] for i in range(0, len(data), _XERIAL_BLOCK))
        chunks = (bytes(cramjam.snappy.compress_raw(block)) for block in blocks)
        return XERIAL_MAGIC + _XERIAL_VERSIONS + b"".join(_INT32.pack(len(c)) + c for c in chunks)
    if codec == CompressionType.LZ4:
        return _lz4_frame(data, LZ4_LEVEL.default if level is None else level)
    if codec == CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=ZSTD_LEVEL.default if level is None else level))
    raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression type {codec}")


def _xxh32_short(data: bytes) -> int:
    """XXH32 with seed 0 of fewer than 16 bytes: the LZ4 frame header's checksum."""
    mask = 0xFFFFFFFF

    def rotl(value: int, bits: int) -> int:
        return ((value << bits) | (value >> (32 - bits))) & mask

    h = (_XXH_PRIME5 + len(data)) & mask
    whole = len(data) - len(data) % 4
    for i in range(0, whole, 4):
        h = rotl((h + int.from_bytes(data[i : i + 4], "little") * _XXH_PRIME3) & mask, 17) * _XXH_PRIME4 & mask
    for byte in data[whole:]:
        h = rotl((h + byte * _XXH_PRIME5) & mask, 11) * _XXH_PRIME1 & mask
    h = ((h ^ (h >> 15)) * _XXH_PRIME2) & mask
    h = ((h ^ (h >> 13)) * _XXH_PRIME3) & mask
    return h ^ (h >> 16)


def _lz4_frame(data: bytes, level: int) -> bytes:
    """An LZ4 frame as Kafka's KafkaLZ4BlockOutputStream writes it: independent 64 KiB blocks, no checksums (Java's
    reader decompresses each block on its own, so linked blocks would not decode there); the fast compressor at
    the default level, the high-compression one at any other, as Kafka picks them."""
    out = [_LZ4_HEADER]
    fast = level == LZ4_LEVEL.default
    for i in range(0, len(data), _LZ4_BLOCK):
        chunk = data[i : i + _LZ4_BLOCK]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False)) if fast else _lz4_block_at(chunk, level)
        if len(block) >= len(chunk):
            out.append(_LE_INT32.pack(len(chunk) | _LZ4_UNCOMPRESSED) + chunk)
        else:
            out.append(_LE_INT32.pack(len(block)) + block)
    out.append(_LE_INT32.pack(0))  # the end mark
    return b"".join(out)


def _lz4_block_at(chunk: bytes, level: int) -> bytes:
    """One LZ4 block of at most 64 KiB compressed at `level`, taken out of the one-block LZ4 frame cramjam's frame
    compressor writes (its block compressor takes no level); a block stored as is comes back as its bytes."""
    frame = bytes(cramjam.lz4.compress(chunk, level=level))
    flags = frame[4]
    position = 6 + (8 if flags & _LZ4_CONTENT_SIZE else 0) + (4 if flags & _LZ4_DICT_ID else 0) + 1
    (size,) = _LE_INT32.unpack_from(frame, position)
    block = frame[position + 4 : position + 4 + (size & ~_LZ4_UNCOMPRESSED)]
    return chunk if size & _LZ4_UNCOMPRESSED else block


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


_LZ4_HEADER = _lz4_header()
