"""The FetchResponse with records spliced in: its bytes are an ordinary FetchResponse, and the follower's reader gets
back every field and every partition's records from any FetchResponse, or protobuf's DecodeError."""

from __future__ import annotations

import random

import pytest
from google.protobuf.message import DecodeError

from minikafka.common.fetch_response_wire import (
    SPLICE_FROM_BYTES,
    DecodedFetchResponse,
    SplicedFetchResponse,
    decode_fetch_response,
    encode_fetch_response,
)
from minikafka.pb import broker_pb2


def answer(records: list[list[bytes]]) -> tuple[broker_pb2.FetchResponse, list[bytes]]:
    """A message without records (one topic per inner list) and the records in order."""
    message = broker_pb2.FetchResponse(error_code=0, session_id=42, throttle_time_ms=3)
    for number, topic_records in enumerate(records):
        topic = message.responses.add(topic_id=bytes([number]) * 16, topic=f"t{number}")
        for index, _ in enumerate(topic_records):
            data = topic.partitions.add(partition_index=index, high_watermark=100 + index, log_start_offset=7)
            data.current_leader.leader_id, data.current_leader.leader_epoch = 2, 5
            if index == 1:
                data.diverging_epoch.epoch, data.diverging_epoch.end_offset = 4, 90
    return message, [batch for topic_records in records for batch in topic_records]


def with_records(message: broker_pb2.FetchResponse, records: list[bytes]) -> broker_pb2.FetchResponse:
    whole = broker_pb2.FetchResponse()
    whole.CopyFrom(message)
    batches = iter(records)
    for topic in whole.responses:
        for partition in topic.partitions:
            partition.records = next(batches)
    return whole


def as_whole(decoded: DecodedFetchResponse) -> broker_pb2.FetchResponse:
    return with_records(decoded.message, [bytes(records) for records in decoded.records])


SHAPES = [
    [],
    [[b""]],
    [[b"a" * 300, b"", b"b" * 5]],
    [[b"x" * 70000], [b"y", b"z" * 200]],
]


# Splicing from 0 bytes on, or never: both ways are exercised whatever the answer's size.
SPLICE = pytest.mark.parametrize("splice_from", [0, 1 << 40], ids=["spliced", "whole"])


@SPLICE
@pytest.mark.parametrize("records", SHAPES)
def test_the_encoded_bytes_are_the_message_with_its_records(records: list[list[bytes]], splice_from: int) -> None:
    message, flat = answer(records)
    encoded = SplicedFetchResponse(message, flat).encode(splice_from)
    assert broker_pb2.FetchResponse.FromString(encoded) == with_records(message, flat)
    served = encode_fetch_response(SplicedFetchResponse(message, flat))  # the gRPC serializer's default
    assert broker_pb2.FetchResponse.FromString(served) == with_records(message, flat)


@SPLICE
@pytest.mark.parametrize("records", SHAPES)
def test_the_reader_gets_back_any_fetch_response(records: list[list[bytes]], splice_from: int) -> None:
    message, flat = answer(records)
    whole = with_records(message, flat)
    for encoded in (whole.SerializeToString(), SplicedFetchResponse(message, flat).encode(0)):
        decoded = decode_fetch_response(encoded, splice_from)
        assert as_whole(decoded) == whole
        assert all(not p.records for t in decoded.message.responses for p in t.partitions)
        assert [bytes(r) for _, _, r in decoded.partitions()] == flat


def test_large_records_are_views_of_the_received_bytes_and_small_ones_copies() -> None:
    message, flat = answer([[b"r" * SPLICE_FROM_BYTES]])
    decoded = decode_fetch_response(SplicedFetchResponse(message, flat).encode())
    assert isinstance(decoded.records[0], memoryview) and decoded.records[0] == flat[0]
    message, flat = answer([[b"r" * 1000]])
    assert decode_fetch_response(SplicedFetchResponse(message, flat).encode()).records == flat


def test_unknown_fields_are_kept_out_of_the_way() -> None:
    """Fields a newer sender adds (here a fixed64 and a fixed32 field) are skipped like protobuf skips them."""
    message, flat = answer([[b"abc"]])
    encoded = SplicedFetchResponse(message, flat).encode(0) + bytes([0x61]) + b"\0" * 8 + bytes([0x6D]) + b"\0" * 4
    assert [bytes(r) for r in decode_fetch_response(encoded, 0).records] == flat


@pytest.mark.parametrize(
    "garbage",
    [b"\x80", b"\x1a\x05\x1a\x03", b"\x1b", b"\x00\x01", b"\x1a\xff\xff\xff\xff\x0f"],
    ids=["truncated-key", "truncated-field", "group", "field-zero", "length-past-end"],
)
def test_malformed_answers_raise_decode_error(garbage: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_fetch_response(garbage, 0)


def test_random_cuts_of_an_answer_never_escape_as_other_errors() -> None:
    message, flat = answer([[b"a" * 40, b"b" * 3], [b"c" * 9]])
    encoded = SplicedFetchResponse(message, flat).encode(0)
    rng = random.Random(7)
    for _ in range(300):
        cut = bytearray(encoded[: rng.randrange(len(encoded))])
        if cut and rng.random() < 0.5:
            cut[rng.randrange(len(cut))] = rng.randrange(256)
        try:
            decode_fetch_response(bytes(cut), 0)
        except DecodeError:
            pass
