"""Kafka's request and response frames: a 4-byte size, a header, a body. Pure: bytes in, entities or errors out.

kio decodes and encodes; its failures (short buffer, unknown tagged field, unknown key or version) become one
`FrameError` so the connection loop handles every bad frame the same way.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from typing import Any

from kio.index import KioIndexError, load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError

from minikafka.broker.kafka_wire.request_guard import LengthError, check_entity
from minikafka.common.errors import ErrorCode

SIZE = struct.Struct(">i")
API_HEADER = struct.Struct(">hhi")  # api key, api version, correlation id: fixed in every header version
API_VERSIONS_KEY = 18


class FrameError(Exception):
    """A frame the broker cannot answer normally; `code` is the Kafka error it amounts to."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ApiHeader:
    api_key: int
    api_version: int
    correlation_id: int


@dataclass(frozen=True)
class Request:
    header: ApiHeader
    client_id: str | None
    body: Any  # the kio request entity


def check_size(size: int, max_bytes: int) -> None:
    """A frame's size prefix, checked before reading its bytes (Kafka's socket.request.max.bytes)."""
    if size < API_HEADER.size:
        raise FrameError(ErrorCode.INVALID_REQUEST, f"frame size {size} is shorter than a request header")
    if size > max_bytes:
        raise FrameError(ErrorCode.INVALID_REQUEST, f"frame size {size} is larger than {max_bytes}")


def check_token_size(size: int, max_bytes: int) -> None:
    """A bare SASL token's size prefix (after a v0 SaslHandshake): it may be shorter than a request header."""
    if not 0 <= size <= max_bytes:
        raise FrameError(ErrorCode.INVALID_REQUEST, f"SASL token size {size} is outside 0..{max_bytes}")


def peek_header(frame: bytes | memoryview) -> ApiHeader:
    if len(frame) < API_HEADER.size:
        raise FrameError(ErrorCode.INVALID_REQUEST, f"frame of {len(frame)} bytes is shorter than a request header")
    return ApiHeader(*API_HEADER.unpack_from(frame))


def decode_request(frame: bytes | memoryview, header: ApiHeader) -> Request:
    """The whole request; raises FrameError for an unknown key or version and for any undecodable byte."""
    try:
        schema = load_request_schema(header.api_key, header.api_version)
    except KioIndexError:
        raise FrameError(
            ErrorCode.UNSUPPORTED_VERSION, f"unknown API key {header.api_key} version {header.api_version}"
        ) from None
    try:
        parsed_header, used = entity_reader(schema.__header_schema__)(frame, 0)
        check_entity(frame, used, schema)  # before kio: a forged count must not reach its allocator
        body, _ = entity_reader(schema)(frame, used)
    except LengthError as error:
        raise FrameError(ErrorCode.CORRUPT_MESSAGE, f"{schema.__name__}: {error}") from None
    except (SerialError, KeyError, ValueError, TypeError, IndexError) as error:
        # KeyError: kio's answer to an unknown tagged field; the others: malformed or short input.
        raise FrameError(ErrorCode.CORRUPT_MESSAGE, f"undecodable {schema.__name__}: {type(error).__name__}") from None
    # Bytes after the body are ignored, as Kafka's request parser does (librdkafka sends some after a
    # Metadata v12 asking for all topics).
    return Request(header, getattr(parsed_header, "client_id", None), body)


def response_class(api_key: int, api_version: int) -> type:
    return load_response_schema(api_key, api_version)


def encode_response(correlation_id: int, body: Any) -> bytes:
    """A complete response frame, size prefix included."""
    out = io.BytesIO()
    out.write(b"\0\0\0\0")
    header_schema = type(body).__header_schema__
    entity_writer(header_schema)(out, header_schema(correlation_id=correlation_id))
    entity_writer(type(body))(out, body)
    frame = out.getbuffer()
    SIZE.pack_into(frame, 0, len(frame) - SIZE.size)
    del frame
    return out.getvalue()
