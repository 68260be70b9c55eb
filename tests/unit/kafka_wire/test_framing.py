"""Frames in and out of the Kafka listener: bad input becomes one FrameError, ApiVersions always answers."""

from __future__ import annotations

import struct

import pytest
from kio.serial import entity_reader

from minikafka.broker.kafka_wire import api_versions
from minikafka.broker.kafka_wire.framing import (
    FrameError,
    check_size,
    decode_request,
    encode_response,
    peek_header,
    response_class,
)
from minikafka.common.errors import ErrorCode

# What librdkafka 2.16 sends for Metadata v12 of all topics: three bytes follow the body.
LIBRDKAFKA_METADATA_V12 = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")


def test_metadata_with_trailing_bytes_decodes_as_kafka_parses_it() -> None:
    request = decode_request(LIBRDKAFKA_METADATA_V12, peek_header(LIBRDKAFKA_METADATA_V12))
    assert request.body.topics is None  # all topics
    assert request.client_id == "rdkafka"
    assert request.header.correlation_id == 3


@pytest.mark.parametrize(
    "frame",
    [
        b"\x00\x03",  # shorter than a header
        bytes.fromhex("0003000c00000003000772646b61"),  # client id cut short
        bytes.fromhex("0003000c00000003000772646b61666b6100") + b"\x02",  # topics array cut short
        bytes.fromhex("0003000c00000003000772646b61666b6100") + bytes.fromhex("0000000174"),  # unknown tagged field
        struct.pack(">hhi", 9999, 0, 1) + b"\0\0",  # unknown API key
        struct.pack(">hhi", 3, 99, 1) + b"\0\0",  # unknown version
    ],
)
def test_bad_frames_raise_one_error_type(frame: bytes) -> None:
    with pytest.raises(FrameError) as caught:
        decode_request(frame, peek_header(frame))
    assert caught.value.code in (ErrorCode.INVALID_REQUEST, ErrorCode.CORRUPT_MESSAGE, ErrorCode.UNSUPPORTED_VERSION)


def test_a_2gb_size_prefix_is_refused_before_reading() -> None:
    with pytest.raises(FrameError, match="larger than"):
        check_size(2**31 - 1, 104857600)
    with pytest.raises(FrameError, match="shorter"):
        check_size(-5, 104857600)


def _decode_response(frame: bytes, api_key: int, version: int) -> object:
    size, correlation_id = struct.unpack_from(">ii", frame)
    assert size == len(frame) - 4
    body, _ = entity_reader(response_class(api_key, version))(frame, 8)
    return correlation_id, body


def test_unsupported_api_versions_version_gets_v0_error_35_with_every_range() -> None:
    frame = encode_response(7, api_versions.response(99, ErrorCode.UNSUPPORTED_VERSION))
    correlation_id, body = _decode_response(frame, 18, 0)
    assert correlation_id == 7
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
    ranges = {key.api_key: (key.min_version, key.max_version) for key in body.api_keys}
    assert ranges == api_versions.SUPPORTED


def test_advertised_ranges_contain_what_old_librdkafka_needs_for_record_batch_v2() -> None:
    assert api_versions.supports(0, 3) and api_versions.supports(1, 4) and api_versions.supports(2, 1)
    assert api_versions.supports(18, 0)  # aiokafka always starts at v0
