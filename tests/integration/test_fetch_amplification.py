"""A forged sessionless Fetch that lists one partition many times, sent as raw frames to a real broker: its answer
stays within max_bytes plus one batch, and the leader's memory does not grow with it. On the Kafka listener (a
Fetch v12 frame) and on gRPC. Before the fix every line was answered with a whole batch whatever max_bytes said
(500 lines of a 512 KiB batch: a 256 MiB answer)."""

from __future__ import annotations

import datetime
import io
import json
import socket
import struct
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from cluster_fixtures import running_cluster
from kio.schema.fetch.v12 import request as fetch_v12
from kio.schema.request_header.v2.header import RequestHeader
from kio.serial import entity_writer

from minikafka.client.admin import AdminClient
from minikafka.common.grpc_support import sync_channel
from minikafka.deploy.local_cluster import Cluster
from minikafka.pb import broker_pb2, broker_pb2_grpc

pytestmark = pytest.mark.integration

TOPIC = "amplified"
VALUE_BYTES = 512 * 1024
LINES = 500
MAX_BYTES = 1 << 20
HEADROOM = 4096  # the answer's own fields around its records
RSS_GROWTH_LIMIT = 64 << 20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("amplification") / "run", 1, 1) as started:
        broker = started.brokers[0].node_id
        tls = started.admin_tls
        AdminClient(started.bootstrap_controllers, started.bootstrap_servers, timeout_s=10, tls=tls).create_topic(
            TOPIC, assignment=[[broker]]
        )
        producer = confluent_kafka.Producer({"bootstrap.servers": started.kafka_bootstrap_servers, "acks": "all"})
        producer.produce(TOPIC, b"x" * VALUE_BYTES, partition=0)
        assert producer.flush(30) == 0
        yield started


def reset_peak(pid: int) -> None:
    """Start the process's VmHWM again from its VmRSS (Linux's clear_refs 5), so it shows this request's peak."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def memory_kib(pid: int) -> dict[str, int]:
    """The process's resident set now (VmRSS) and at its peak so far (VmHWM), in KiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {key: int(fields[key].split()[0]) for key in ("VmRSS", "VmHWM")}


def fetch_frame(lines: int) -> bytes:
    partition = fetch_v12.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=MAX_BYTES)
    body = fetch_v12.FetchRequest(
        max_wait=datetime.timedelta(0),
        min_bytes=1,
        max_bytes=MAX_BYTES,
        session_id=0,
        session_epoch=-1,
        topics=(fetch_v12.FetchTopic(topic=TOPIC, partitions=(partition,) * lines),),
        forgotten_topics_data=(),
    )
    out = io.BytesIO()
    entity_writer(RequestHeader)(
        out, RequestHeader(request_api_key=1, request_api_version=12, correlation_id=7, client_id="forged")
    )
    entity_writer(fetch_v12.FetchRequest)(out, body)
    return struct.pack(">i", len(out.getvalue())) + out.getvalue()


def read_frame(sock: socket.socket) -> bytes:
    """One size-prefixed frame, read into one buffer (an answer of hundreds of MiB before the fix)."""
    size = struct.unpack(">i", read_exactly(sock, 4))[0]
    return bytes(read_exactly(sock, size))


def read_exactly(sock: socket.socket, size: int) -> bytearray:
    data = bytearray(size)
    view, got = memoryview(data), 0
    while got < size:
        count = sock.recv_into(view[got:], size - got)
        assert count, "connection closed by the broker"
        got += count
    return data


def test_kafka_listener_fetch_of_one_partition_many_times_is_bounded(cluster: Cluster) -> None:
    pid = cluster.pids[cluster.brokers[0].node_id]
    reset_peak(pid)
    before = memory_kib(pid)
    host, port = cluster.brokers[0].kafka_address.rsplit(":", 1)  # type: ignore[union-attr]
    frame = fetch_frame(LINES)
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(frame)
        answer = read_frame(sock)
    after = memory_kib(pid)
    figures = {"request_bytes": len(frame), "answer_bytes": len(answer), "before_kib": before, "after_kib": after}
    print(json.dumps({"kafka_listener_fetch": figures}))
    assert struct.unpack_from(">i", answer)[0] == 7
    assert VALUE_BYTES < len(answer) <= MAX_BYTES + HEADROOM
    assert (after["VmHWM"] - before["VmRSS"]) * 1024 < RSS_GROWTH_LIMIT


def test_grpc_fetch_of_one_partition_many_times_is_bounded(cluster: Cluster) -> None:
    pid = cluster.pids[cluster.brokers[0].node_id]
    reset_peak(pid)
    before = memory_kib(pid)
    request = broker_pb2.FetchRequest(max_wait_ms=0, min_bytes=1, max_bytes=MAX_BYTES)
    topic = request.topics.add(topic=TOPIC)
    for _ in range(LINES):
        topic.partitions.add(partition=0, fetch_offset=0, current_leader_epoch=-1, partition_max_bytes=MAX_BYTES)
    stub = broker_pb2_grpc.BrokerStub(sync_channel(cluster.brokers[0].address))
    answer = stub.Fetch(request, timeout=60)
    after = memory_kib(pid)
    figures = {"request_bytes": request.ByteSize(), "answer_bytes": answer.ByteSize(), "before_kib": before}
    print(json.dumps({"grpc_fetch": {**figures, "after_kib": after}}))
    assert [len(t.partitions) for t in answer.responses] == [1]
    assert VALUE_BYTES < answer.ByteSize() <= MAX_BYTES + HEADROOM
    assert (after["VmHWM"] - before["VmRSS"]) * 1024 < RSS_GROWTH_LIMIT
