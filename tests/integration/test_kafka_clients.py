"""Unmodified Kafka clients against a 3+3 cluster of real processes, through the brokers' Kafka listeners; and
bad input on a listener: the connection is dropped with a logged event, the broker carries on."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import socket
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import eventually, recv_frame, running_cluster

from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster, is_alive
from minikafka.deploy.scenario.clients import consume_partition
from minikafka.storage.dump_log import dump_log

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")

TOPIC = "orders"
COMPRESSED_TOPIC = "compressed"
CODECS = ["gzip", "snappy", "lz4", "zstd"]
IDLE_MS = 3000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    run_dir = tmp_path_factory.mktemp("kafka-clients")
    with running_cluster(run_dir, 3, 3, **{"connections.max.idle.ms": str(IDLE_MS)}) as started:
        with cluster_commands.admin_for(started, timeout_s=10) as admin:
            admin.create_topic(TOPIC, partitions=3, replication_factor=3, configs={"min.insync.replicas": "2"})
        yield started


def _produce(bootstrap: str, count: int, prefix: str) -> list[tuple[int, int]]:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "enable.idempotence": True}
    )
    acked: list[tuple[int, int]] = []
    errors = []

    def delivered(error: object, message: object) -> None:
        if error is not None:
            errors.append(error)
        else:
            acked.append((message.partition(), message.offset()))  # type: ignore[attr-defined]

    for i in range(count):
        producer.produce(TOPIC, value=f"{prefix}-{i}".encode(), partition=i % 3, on_delivery=delivered)
    assert producer.flush(30) == 0
    assert errors == []
    return acked


def _consume_all(bootstrap: str, expected: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "assign-only", "enable.auto.commit": False}
    )
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING) for p in range(3)])
    values: list[bytes] = []
    try:

        def read_some() -> bool:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
            return len(values) >= expected

        eventually(read_some, 30, f"{expected} records consumed", interval_s=0)
    finally:
        consumer.close()
    return values


def test_confluent_kafka_producer_acks_all_and_consumer_assign(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    acked = _produce(bootstrap, 300, "confluent")
    assert len(set(acked)) == 300
    values = _consume_all(bootstrap, 300)
    assert sorted(v for v in values if v.startswith(b"confluent-")) == sorted(
        f"confluent-{i}".encode() for i in range(300)
    )
    low, high = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "w"}).get_watermark_offsets(
        confluent_kafka.TopicPartition(TOPIC, 0), timeout=10
    )
    assert (low, high) == (0, max(offset for partition, offset in acked if partition == 0) + 1)


def test_confluent_kafka_offsets_for_times(cluster: Cluster) -> None:
    """ListOffsets by timestamp: the first offset whose record timestamp is at or after the target; none past the
    last; MAX_TIMESTAMP (-3) finds the record with the largest timestamp, wherever it is in the log."""
    bootstrap, topic = cluster.kafka_bootstrap_servers, "stamped"
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    stamps = [1_700_000_000_000 + step for step in (0, 1000, 2000, 9000, 3000)]
    for i, stamp in enumerate(stamps):
        producer.produce(topic, value=b"%d" % i, partition=0, timestamp=stamp)
        assert producer.flush(30) == 0  # one batch per record: the lookup must walk batches and records
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "times"})
    try:
        targets = {stamps[0] - 1: 0, stamps[1]: 1, stamps[1] + 1: 2, stamps[4] + 1: 3, stamps[3] + 1: -1, -3: 3}
        for target, offset in targets.items():
            [found] = consumer.offsets_for_times([confluent_kafka.TopicPartition(topic, 0, target)], timeout=15)
            assert (found.error, found.offset) == (None, offset), target
    finally:
        consumer.close()


def test_offset_commit_to_an_unknown_topic_is_refused_per_partition(cluster: Cluster) -> None:
    """Kafka answers UNKNOWN_TOPIC_OR_PARTITION for a topic its metadata lacks and stores nothing (librdkafka's
    0030 checks it); the known topic in the same commit is stored."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": "lost"})
    try:
        offsets = [confluent_kafka.TopicPartition("no-such-topic", 0, 5), confluent_kafka.TopicPartition(TOPIC, 0, 0)]
        try:
            answered = consumer.commit(offsets=offsets, asynchronous=False)
        except confluent_kafka.KafkaException as error:
            answered = error.args[0]  # the first partition error, raised
            assert answered.code() == confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART
        else:
            errors = {tp.topic: tp.error.code() if tp.error else None for tp in answered}
            assert errors == {"no-such-topic": confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART, TOPIC: None}
        stored = consumer.committed([confluent_kafka.TopicPartition(TOPIC, 0)], timeout=10)
        assert stored[0].offset == 0
    finally:
        consumer.close()


def test_metadata_lists_every_broker_on_its_kafka_listener(cluster: Cluster) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.brokers[0].kafka_address})
    metadata = producer.list_topics(timeout=10)
    assert {b.id: f"{b.host}:{b.port}" for b in metadata.brokers.values()} == {
        spec.node_id: spec.kafka_address for spec in cluster.brokers
    }
    assert len(metadata.topics[TOPIC].partitions) == 3
    assert metadata.topics[TOPIC].partitions[0].replicas and not metadata.topics[TOPIC].partitions[0].error


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (Debian/Ubuntu: apt-get install kcat)")
def test_kcat_lists_produces_and_consumes(cluster: Cluster) -> None:
    bootstrap = cluster.kafka_bootstrap_servers
    listing = subprocess.run(["kcat", "-b", bootstrap, "-L", "-J"], capture_output=True, text=True, timeout=30)
    assert listing.returncode == 0, listing.stderr
    assert TOPIC in {topic["topic"] for topic in json.loads(listing.stdout)["topics"]}
    lines = [f"kcat-{i}" for i in range(50)]
    _kcat_produce(bootstrap, TOPIC, 1, lines)
    assert [line for line in _kcat_consume(bootstrap, TOPIC, 1) if line.startswith("kcat-")] == lines


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (Debian/Ubuntu: apt-get install kcat)")
def test_compressed_batches_are_stored_as_sent_and_read_back(cluster: Cluster) -> None:
    """Each of Kafka's codecs from confluent-kafka, and zstd from kcat -z: the leader validates and stores each
    compressed batch as sent; kcat and minikafka's own consumer read the records back, and the replicas' segments
    hold every codec. (librdkafka before 2.11.1, kcat's here, sends gzip, snappy and lz4 uncompressed to a broker
    whose Produce versions start at 3, as Kafka 4's do: a client bug, so kcat is only asked for zstd.)"""
    bootstrap = cluster.kafka_bootstrap_servers
    with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
        admin.create_topic(COMPRESSED_TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    # Repetitive values, so each codec shrinks its batch and librdkafka keeps it compressed.
    sent = {codec: [f"{codec}-{i}-" + "compressible " * 8 for i in range(40)] for codec in [*CODECS, "kcat-zstd"]}
    for codec in CODECS:
        producer = confluent_kafka.Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 50, "compression.type": codec}
        )
        for value in sent[codec]:
            producer.produce(COMPRESSED_TOPIC, value=value.encode(), partition=0)
        assert producer.flush(30) == 0
    _kcat_produce(bootstrap, COMPRESSED_TOPIC, 0, sent["kcat-zstd"], "-z", "zstd")
    expected = [value for values in sent.values() for value in values]
    assert _kcat_consume(bootstrap, COMPRESSED_TOPIC, 0) == expected
    read = asyncio.run(consume_partition(cluster.bootstrap_servers, COMPRESSED_TOPIC, len(expected)))
    assert [read[offset] for offset in sorted(read)] == expected
    segments = sorted(cluster.run_dir.glob(f"**/{COMPRESSED_TOPIC}-0/*.log"))
    stored = {batch["compression"] for segment in segments for batch in dump_log(segment)["batches"]}
    assert stored == set(CODECS), segments


def _kcat_produce(bootstrap: str, topic: str, partition: int, lines: list[str], *options: str) -> None:
    produced = subprocess.run(
        ["kcat", "-b", bootstrap, "-P", "-t", topic, "-p", str(partition), *options, "-X", "acks=all"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert produced.returncode == 0, produced.stderr


def _kcat_consume(bootstrap: str, topic: str, partition: int) -> list[str]:
    """Every record of the partition from the beginning, one line each (kcat exits at the end)."""
    consumed = subprocess.run(
        ["kcat", "-b", bootstrap, "-C", "-t", topic, "-p", str(partition), "-o", "beginning", "-e", "-q"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert consumed.returncode == 0, consumed.stderr
    return consumed.stdout.splitlines()


def test_kafka_python_producer_and_assigned_consumer(cluster: Cluster) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is in the dev extra")
    bootstrap = cluster.kafka_bootstrap_servers.split(",")
    # Idempotence (kafka-python's default) needs InitProducerId, which the listener does not serve yet.
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, acks="all")  # idempotent by default
    sent = [producer.send(TOPIC, value=f"kafka-python-{i}".encode(), partition=i % 3) for i in range(60)]
    producer.flush(30)
    offsets = {(future.get(10).partition, future.get(10).offset) for future in sent}
    producer.close()
    assert len(offsets) == 60
    sessions_before = _consumer_fetch_sessions(cluster)
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, consumer_timeout_ms=10000)
    consumer.assign([kafka.TopicPartition(TOPIC, p) for p in range(3)])
    consumer.seek_to_beginning()
    values = []
    for message in consumer:
        if message.value.startswith(b"kafka-python-"):
            values.append(message.value)
        if len(values) == 60:
            break
    consumer.close()
    assert sorted(values) == sorted(f"kafka-python-{i}".encode() for i in range(60))
    # kafka-python fetches in KIP-227 sessions: one per leader it reads from, kept (a session error would
    # make it open another with its next full fetch). The brokers' event files are written behind the calls.
    opened = eventually(
        lambda: (n := _consumer_fetch_sessions(cluster) - sessions_before) >= 1 and n,
        10,
        "the brokers' fetch_session_created events for kafka-python's consumer",
    )
    assert opened <= len(cluster.brokers)


def _consumer_fetch_sessions(cluster: Cluster) -> int:
    """Fetch sessions the brokers opened for clients on their Kafka listeners (replica id -1)."""
    opened = 0
    for broker in cluster.brokers:
        lines = broker.events_path.read_text().splitlines() if broker.events_path.exists() else []
        events = (json.loads(line) for line in lines if '"fetch_session_created"' in line)
        opened += sum(event["event"] == "fetch_session_created" and event["replica_id"] == -1 for event in events)
    return opened


async def test_aiokafka_producer_and_assigned_consumer(cluster: Cluster) -> None:
    aiokafka = pytest.importorskip("aiokafka", reason="aiokafka is in the dev extra")
    bootstrap = cluster.kafka_bootstrap_servers
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    await producer.start()
    try:
        for i in range(60):
            await producer.send_and_wait(TOPIC, f"aiokafka-{i}".encode(), partition=i % 3)
    finally:
        await producer.stop()
    consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    values: list[bytes] = []
    try:
        consumer.assign([aiokafka.TopicPartition(TOPIC, p) for p in range(3)])
        await consumer.seek_to_beginning()
        deadline = asyncio.get_running_loop().time() + 30
        while len(values) < 60 and asyncio.get_running_loop().time() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            values += [m.value for ms in batches.values() for m in ms if m.value.startswith(b"aiokafka-")]
    finally:
        await consumer.stop()
    assert sorted(values) == sorted(f"aiokafka-{i}".encode() for i in range(60))


# ---- bad input ----


def _connect(cluster: Cluster) -> socket.socket:
    host, port = cluster.brokers[0].kafka_address.rsplit(":", 1)  # type: ignore[union-attr]
    return socket.create_connection((host, int(port)), timeout=IDLE_MS / 1000 * 5)


def _closed_by_broker(sock: socket.socket) -> bool:
    """True once the broker closed the connection (EOF); responses before it are skipped."""
    while chunk := sock.recv(65536):
        del chunk
    return True


def _closed_events(cluster: Cluster) -> list[dict]:
    path = cluster.brokers[0].events_path
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [event for event in events if event["event"] == "kafka_connection_closed"]


def _broker_still_answers(cluster: Cluster) -> None:
    assert is_alive(cluster.pids[cluster.brokers[0].node_id])
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.brokers[0].kafka_address})
    assert TOPIC in producer.list_topics(timeout=10).topics


@pytest.mark.parametrize(
    ("name", "payload", "reason"),
    [
        ("garbage", b"\x00\x00\x00\x10" + b"\xff" * 16, "UNSUPPORTED_VERSION"),
        ("2 GB size prefix", struct.pack(">i", 2**31 - 1), "larger than"),
        ("unknown API key", struct.pack(">ihhi", 8, 4242, 0, 1), "UNSUPPORTED_VERSION"),
        ("unknown Metadata version", struct.pack(">ihhi", 8, 3, 99, 1), "UNSUPPORTED_VERSION"),
        ("truncated frame", struct.pack(">i", 100) + b"\x00\x03\x00\x0c", "truncated frame"),
        ("idle client", b"", "connections.max.idle.ms"),
    ],
)
def test_bad_frames_close_the_connection_with_a_logged_reason(
    cluster: Cluster, name: str, payload: bytes, reason: str
) -> None:
    before = len(_closed_events(cluster))
    with _connect(cluster) as sock:
        sock.sendall(payload)
        if name == "truncated frame":
            sock.shutdown(socket.SHUT_WR)
        assert _closed_by_broker(sock)
    logged = eventually(lambda: _closed_events(cluster)[before:], 10, f"kafka_connection_closed for {name}")
    assert any(reason in event["reason"] for event in logged), logged
    _broker_still_answers(cluster)


def test_api_versions_at_an_unknown_version_answers_v0_with_error_35(cluster: Cluster) -> None:
    with _connect(cluster) as sock:
        sock.sendall(struct.pack(">ihhi", 10, 18, 99, 77) + b"\xff\xff")
        body = recv_frame(sock)
    correlation_id, error_code, count = struct.unpack_from(">ihi", body)
    assert (correlation_id, error_code) == (77, 35)
    ranges = {
        struct.unpack_from(">hhh", body, 10 + 6 * i)[0]: struct.unpack_from(">hhh", body, 10 + 6 * i)[1:]
        for i in range(count)
    }
    assert ranges[0][0] <= 3 <= ranges[0][1] and ranges[1][0] <= 4 <= ranges[1][1]


def test_random_frames_never_kill_the_broker(cluster: Cluster, tmp_path: Path) -> None:
    rng = random.Random(20261125)
    for _ in range(200):
        api_key = rng.choice([0, 1, 2, 3, 18, rng.randrange(-5, 100)])
        body = rng.randbytes(rng.randrange(0, 64))
        header = struct.pack(">hhi", api_key, rng.randrange(-1, 20), rng.randrange(2**31)) + body
        frame = struct.pack(">i", len(header)) + header
        with _connect(cluster) as sock:
            sock.sendall(frame[: rng.randrange(1, len(frame) + 1)])
            sock.shutdown(socket.SHUT_WR)
            _closed_by_broker(sock)
    _broker_still_answers(cluster)
