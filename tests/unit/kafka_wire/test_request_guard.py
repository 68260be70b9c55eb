"""Forged lengths are refused before kio decodes them; real requests pass the check unchanged."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import uuid

import pytest
from kio.index import load_request_schema
from kio.serial import entity_writer

from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import FrameError, decode_request, peek_header

# Produce v9 (flexible): null transactional id, acks -1, timeout 30 s, then a topic array claiming 4 billion entries.
FORGED_PRODUCE = bytes.fromhex("0000000900000001ffff00" + "00" + "ffff" + "00007530" + "ffffffff0f")
# Produce v3 (legacy): the same with a 2^31-1 topic count.
FORGED_LEGACY_PRODUCE = bytes.fromhex("0000000300000001ffff" + "ffff" + "ffff" + "00007530" + "7fffffff")


@pytest.mark.parametrize("frame", [FORGED_PRODUCE, FORGED_LEGACY_PRODUCE])
def test_a_forged_array_count_is_a_frame_error_not_a_dead_process(frame: bytes) -> None:
    # In a child process: before the check, kio's reader aborted the whole process reserving the array.
    code = (
        "import sys\n"
        "from minikafka.broker.kafka_wire.framing import FrameError, decode_request, peek_header\n"
        f"frame = bytes.fromhex({frame.hex()!r})\n"
        "try:\n"
        "    decode_request(frame, peek_header(frame))\n"
        "except FrameError as error:\n"
        "    print('refused', error.code.name)\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr[-500:]
    assert child.stdout.strip() == "refused CORRUPT_MESSAGE"


def _frame(api_key: int, version: int, body: object) -> bytes:
    schema = load_request_schema(api_key, version)
    header_schema = schema.__header_schema__
    out = io.BytesIO()
    entity_writer(header_schema)(
        out, header_schema(request_api_key=api_key, request_api_version=version, correlation_id=5, client_id="t")
    )
    entity_writer(schema)(out, body)
    return out.getvalue()


def _produce(version: int) -> object:
    cls = load_request_schema(0, version)
    data = build(sibling(cls, "PartitionProduceData"), index=2, records=b"\x01" * 70)
    topic = build(sibling(cls, "TopicProduceData"), name="orders", partition_data=(data, data))
    return build(cls, transactional_id=None, acks=-1, timeout=30000, topic_data=(topic,))


def _fetch(version: int) -> object:
    cls = load_request_schema(1, version)
    line = build(
        sibling(cls, "FetchPartition"),
        partition=1,
        current_leader_epoch=3,
        fetch_offset=10,
        last_fetched_epoch=-1,
        log_start_offset=-1,
        partition_max_bytes=1024,
    )
    topic = build(sibling(cls, "FetchTopic"), topic="orders", topic_id=uuid.uuid4(), partitions=(line,))
    forgotten = (
        build(sibling(cls, "ForgottenTopic"), topic="gone", topic_id=uuid.uuid4(), partitions=(1, 2))
        if (version >= 7)
        else None
    )
    return build(
        cls,
        replica_id=-1,
        max_wait=500,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=(topic,),
        forgotten_topics_data=(forgotten,) if forgotten else (),
        rack_id="",
    )


@pytest.mark.parametrize(("api_key", "version"), [(0, 3), (0, 8), (0, 9), (0, 12), (1, 4), (1, 11), (1, 12), (1, 16)])
def test_well_formed_requests_pass_the_check(api_key: int, version: int) -> None:
    body = _produce(version) if api_key == 0 else _fetch(version)
    frame = _frame(api_key, version, body)
    assert decode_request(frame, peek_header(frame)).body == body


def test_a_string_longer_than_the_frame_is_refused() -> None:
    frame = _frame(0, 3, _produce(3))
    topic_name_at = frame.index(b"orders") - 2
    forged = frame[:topic_name_at] + struct.pack(">h", 30000) + frame[topic_name_at + 2 :]
    with pytest.raises(FrameError, match="bytes declared"):
        decode_request(forged, peek_header(forged))
