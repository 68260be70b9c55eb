"""Log compaction with real processes and unmodified clients: a topic created with cleanup.policy=compact and small
segments, written with confluent-kafka; every replica's cleaner compacts its own log (log_cleaned events); kafka-python
and confluent-kafka read it back across the offset gaps with the latest value of every key; tombstoned keys vanish
once delete.retention.ms has passed; and after the leader is SIGKILLed mid-stream, a follower's cleaned log serves
the same latest values, and the killed broker recovers its own."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster

from minikafka.common.record_batch import iter_batches
from minikafka.deploy.analysis.report import analyze
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
admin_module = pytest.importorskip("confluent_kafka.admin")
kafka = pytest.importorskip("kafka", reason="kafka-python is in the dev extra")

TOPIC = "compacted"
KEYS = [f"key-{n:02d}" for n in range(20)]
DELETED = KEYS[:3]
ROUNDS = 30
AFTER = 12  # rounds of the other keys after the tombstones
DELETE_RETENTION_MS = 4000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    overrides = {
        "log.cleaner.backoff.ms": "200",
        "offsets.topic.segment.bytes": "4096",
        "transaction.state.log.segment.bytes": "4096",
        "transaction.state.log.num.partitions": "3",
    }
    with running_cluster(tmp_path_factory.mktemp("compaction"), 1, 3, **overrides) as started:
        admin = admin_module.AdminClient({"bootstrap.servers": started.kafka_bootstrap_servers})
        configs = {
            "cleanup.policy": "compact",
            "segment.bytes": "4096",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": str(DELETE_RETENTION_MS),
            "min.insync.replicas": "2",
        }
        topic = admin_module.NewTopic(TOPIC, num_partitions=1, replication_factor=3, config=configs)
        admin.create_topics([topic])[TOPIC].result(30)
        eventually(lambda: TOPIC in admin.list_topics(timeout=10).topics, 20, "the topic in metadata")
        yield started


def produce(cluster: Cluster, records: list[tuple[str, str | None]]) -> None:
    """Every record acknowledged by acks=all, in order (one partition: the last write of a key is its latest)."""
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all", "linger.ms": 5, "batch.num.messages": 10}
    )
    failures: list[object] = []
    for key, value in records:
        producer.produce(TOPIC, key=key, value=value, on_delivery=lambda error, _m: error and failures.append(error))
        producer.poll(0)
    assert producer.flush(60) == 0 and not failures, failures


def read_with_kafka_python(cluster: Cluster) -> list[tuple[int, str, str | None]]:
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=cluster.kafka_bootstrap_servers,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        consumer_timeout_ms=3000,
    )
    try:
        partition = kafka.TopicPartition(TOPIC, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        end = consumer.end_offsets([partition])[partition]
        read = []
        for message in consumer:
            value = None if message.value is None else message.value.decode()
            read.append((message.offset, message.key.decode(), value))
            if message.offset >= end - 1:
                break
        return read
    finally:
        consumer.close()


def read_with_confluent(cluster: Cluster) -> list[tuple[int, str, str | None]]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "group.id": "compaction-check",
            "enable.auto.commit": False,
        }
    )
    try:
        low, high = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(TOPIC, 0), timeout=10)
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, low)])
        read: list[tuple[int, str, str | None]] = []
        while not read or read[-1][0] < high - 1:
            message = consumer.poll(10)
            assert message is not None, f"no record after offset {read[-1][0] if read else low} (end {high})"
            assert message.error() is None, message.error()
            value = message.value()
            read.append((message.offset(), message.key().decode(), None if value is None else value.decode()))
        return read
    finally:
        consumer.close()


def latest(records: list[tuple[int, str, str | None]]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for _offset, key, value in records:
        found[key] = value
    return found


def cleaned_events(cluster: Cluster, node_id: int) -> list[dict[str, object]]:
    path = cluster.node(node_id).events_path
    events = [json.loads(line) for line in path.read_text().splitlines() if '"log_cleaned"' in line]
    return [e for e in events if e["event"] == "log_cleaned" and e["partition"] == f"{TOPIC}-0"]


def leader_of(cluster: Cluster, topic: str = TOPIC) -> int:
    admin = admin_module.AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})
    return int(admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader)


def expected_latest() -> dict[str, str | None]:
    return {key: (None if key in DELETED else f"{key}-v{ROUNDS - 1}") for key in KEYS}


def test_every_replica_compacts_and_clients_read_the_latest_value_of_every_key(cluster: Cluster) -> None:
    produce(cluster, [(key, f"{key}-v{round_}") for round_ in range(ROUNDS) for key in KEYS])
    produce(cluster, [(key, None) for key in DELETED])
    # More writes of the other keys roll the tombstones out of the active segment (only inactive ones are cleaned).
    produce(cluster, [(key, f"{key}-v{ROUNDS - 1}") for _ in range(AFTER) for key in KEYS[len(DELETED) :]])
    for broker in cluster.brokers:
        eventually(lambda b=broker: cleaned_events(cluster, b.node_id), 60, f"broker {broker.node_id} cleaning")
    produced = ROUNDS * len(KEYS) + len(DELETED) + AFTER * (len(KEYS) - len(DELETED))
    for read in (read_with_kafka_python(cluster), read_with_confluent(cluster)):
        assert len(read) < produced / 2, f"{len(read)} records of {produced}: not compacted"
        offsets = [offset for offset, _, _ in read]
        assert offsets == sorted(set(offsets)) and offsets[-1] == produced - 1
        survived = latest(read)
        assert {k: v for k, v in survived.items() if v is not None} == {
            k: v for k, v in expected_latest().items() if v is not None
        }
        assert all(survived.get(key) is None for key in DELETED)  # a tombstone, or nothing at all
    event = cleaned_events(cluster, leader_of(cluster))[0]
    assert int(event["bytes_after"]) < int(event["bytes_before"])  # type: ignore[call-overload]


def test_tombstoned_keys_vanish_after_delete_retention_ms(cluster: Cluster) -> None:
    def tombstones_gone() -> bool:
        return all(
            sum(int(e["tombstones_removed"]) for e in cleaned_events(cluster, b.node_id)) >= len(DELETED)  # type: ignore[call-overload]
            for b in cluster.brokers
        )

    eventually(tombstones_gone, DELETE_RETENTION_MS / 1000 + 60, "every replica removing the tombstones")
    read = read_with_kafka_python(cluster)
    assert not {key for _, key, _ in read} & set(DELETED)
    assert latest(read) == {k: v for k, v in expected_latest().items() if v is not None}


def test_consumer_offsets_is_compacted_and_keeps_each_groups_latest_commit(cluster: Cluster) -> None:
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": "committer", "enable.auto.commit": False}
    )
    try:
        for offset in range(1, 301):  # each commit an OffsetCommit record with the same key
            consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 0, offset)], asynchronous=False)

        def offsets_cleaned() -> list[dict[str, object]]:
            return [
                e
                for b in cluster.brokers
                for e in _events(cluster, b.node_id, "log_cleaned")
                if str(e["partition"]).startswith("__consumer_offsets-")
            ]

        cleaned = eventually(offsets_cleaned, 60, "a cleaning of __consumer_offsets")
        assert any(int(e["records_after"]) < int(e["records_before"]) for e in cleaned)  # type: ignore[call-overload]
        [committed] = consumer.committed([confluent_kafka.TopicPartition(TOPIC, 0)], timeout=10)
        assert committed.offset == 300
    finally:
        consumer.close()


def test_transaction_state_is_created_as_kafka_creates_it_and_keeps_each_ids_latest_state(cluster: Cluster) -> None:
    topic = "transactions-written"
    admin = admin_module.AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})
    admin.create_topics([admin_module.NewTopic(topic, num_partitions=1, replication_factor=3)])[topic].result(30)
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "transactional.id": "state-writer"}
    )
    producer.init_transactions(60)
    for round_ in range(40):  # each transaction three states of the same key: Ongoing, PrepareCommit, CompleteCommit
        producer.begin_transaction()
        producer.produce(topic, key="txn-key", value=f"t{round_}")
        producer.commit_transaction(60)
    resource = admin_module.ConfigResource("topic", "__transaction_state")
    described = admin.describe_configs([resource])[resource].result(30)
    assert {key: described[key].value for key in ("cleanup.policy", "compression.type", "segment.bytes")} == {
        "cleanup.policy": "compact",
        "compression.type": "uncompressed",
        "segment.bytes": "4096",
    }

    def state_cleaned() -> list[dict[str, object]]:
        return [
            e
            for b in cluster.brokers
            for e in _events(cluster, b.node_id, "log_cleaned")
            if str(e["partition"]).startswith("__transaction_state-")
            and int(e["records_after"]) < int(e["records_before"])  # type: ignore[call-overload]
        ]

    eventually(state_cleaned, 60, "a cleaning of __transaction_state")
    # The id's state survived: a new producer with it bumps the epoch, and the old one is fenced.
    successor = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "transactional.id": "state-writer"}
    )
    successor.init_transactions(60)
    successor.begin_transaction()
    successor.produce(topic, key="txn-key", value="successor")
    successor.commit_transaction(60)
    with pytest.raises(confluent_kafka.KafkaException) as fenced:
        producer.begin_transaction()
        producer.produce(topic, key="txn-key", value="zombie")
        producer.commit_transaction(60)
    assert fenced.value.args[0].code() == confluent_kafka.KafkaError._FENCED


def _events(cluster: Cluster, node_id: int, name: str) -> list[dict[str, object]]:
    lines = cluster.node(node_id).events_path.read_text().splitlines()
    return [event for line in lines if f'"{name}"' in line and (event := json.loads(line))["event"] == name]


def read_isolated(cluster: Cluster, topic: str, isolation: str) -> list[tuple[int, str, str | None]]:
    """Every record of partition 0 of `topic` up to its end, read with `isolation`."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": f"check-{isolation}",
         "enable.auto.commit": False, "isolation.level": isolation}
    )  # fmt: skip
    try:
        partition = confluent_kafka.TopicPartition(topic, 0, 0)
        _low, high = consumer.get_watermark_offsets(partition, timeout=10)
        consumer.assign([partition])
        read: list[tuple[int, str, str | None]] = []
        while True:
            message = consumer.poll(3)
            if message is None:
                return read
            assert message.error() is None, message.error()
            value = message.value()
            read.append((message.offset(), message.key().decode(), None if value is None else value.decode()))
            if message.offset() >= high - 1:
                return read
    finally:
        consumer.close()


def test_the_cleaner_removes_aborted_transactions_and_compacts_committed_ones(cluster: Cluster) -> None:
    topic = "compacted-txn"
    admin = admin_module.AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})
    configs = {"cleanup.policy": "compact", "segment.bytes": "4096", "min.cleanable.dirty.ratio": "0.01"}
    admin.create_topics([admin_module.NewTopic(topic, num_partitions=1, replication_factor=3, config=configs)])[
        topic
    ].result(30)
    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": cluster.kafka_bootstrap_servers,
            "transactional.id": "compacted-writer",
            "batch.num.messages": 10,  # a batch fits the 4096-byte segments
        }
    )
    producer.init_transactions(60)
    for round_ in range(10):  # every key written in each transaction; odd rounds aborted, the last committed
        producer.begin_transaction()
        for key in KEYS:
            producer.produce(topic, key=key, value=f"{key}-t{round_}", partition=0)
        if round_ % 2 and round_ != 9:
            assert producer.flush(60) == 0  # sent, so the abort has records to abort
            producer.abort_transaction(60)
        else:
            producer.commit_transaction(60)
    # Plain writes of other keys roll the transactions out of the active segment.
    plain = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all", "batch.num.messages": 10}
    )
    failures: list[object] = []
    for round_ in range(30):
        for key in KEYS:
            plain.produce(
                topic, key=f"plain-{key}", value=f"p{round_}", partition=0,
                on_delivery=lambda error, _m: error and failures.append(error),
            )  # fmt: skip
            plain.poll(0)
    assert plain.flush(60) == 0 and not failures, failures

    def cleaned() -> list[dict[str, object]]:
        lines = cluster.node(leader_of(cluster, topic)).events_path.read_text().splitlines()
        return [e for line in lines if '"log_cleaned"' in line and (e := json.loads(line))["partition"] == f"{topic}-0"]

    transactions_end = 10 * (len(KEYS) + 1)  # each transaction's records and its marker
    eventually(
        lambda: any(int(e["end_offset"]) >= transactions_end for e in cleaned()),  # type: ignore[call-overload]
        60,
        "the leader cleaning past the transactions",
    )
    committed = read_isolated(cluster, topic, "read_committed")
    assert {k: v for k, v in latest(committed).items() if not k.startswith("plain-")} == {
        key: f"{key}-t9" for key in KEYS
    }
    # Read without isolation, the cleaned log holds no aborted record and one committed value per key.
    uncommitted = [r for r in read_isolated(cluster, topic, "read_uncommitted") if not r[1].startswith("plain-")]
    assert not any(int(value.rsplit("-t", 1)[1]) in (1, 3, 5, 7) for _, _, value in uncommitted if value)
    assert sorted(key for _, key, _ in uncommitted) == sorted(KEYS)


def test_a_killed_leader_leaves_the_latest_values_on_its_followers_and_recovers_its_own(
    cluster: Cluster, tmp_path: Path
) -> None:
    faults = Faults(cluster)
    killed = leader_of(cluster)
    faults.kill(killed)  # SIGKILL: whatever its cleaner was doing is cut short
    eventually(lambda: leader_of(cluster) not in (killed, -1), 60, "a new leader")
    moved = KEYS[len(DELETED) : len(DELETED) + 5]
    produce(cluster, [(key, f"{key}-after") for key in moved])
    expected = {k: v for k, v in expected_latest().items() if v is not None}
    expected.update({key: f"{key}-after" for key in moved})
    assert {k: v for k, v in latest(read_with_confluent(cluster)).items() if v is not None} == expected
    faults.start(killed)
    # The restarted broker recovers its cleaned log and catches up across the leader's gaps; every replica's log
    # then holds the same latest values.
    for broker in cluster.brokers:
        eventually(
            lambda b=broker: replica_latest(cluster, b.node_id, tmp_path) == expected,
            120,
            f"broker {broker.node_id}'s log holding every latest value",
        )
    # The group coordinators that moved with the kill loaded their groups from compacted __consumer_offsets logs.
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": "committer", "enable.auto.commit": False}
    )
    try:
        [committed] = consumer.committed([confluent_kafka.TopicPartition(TOPIC, 0)], timeout=30)
        assert committed.offset == 300
    finally:
        consumer.close()


def replica_latest(cluster: Cluster, node_id: int, scratch: Path) -> dict[str, str | None]:
    """The latest values in a broker's own log files, read from a copy of them (opened as after a crash)."""
    copy = scratch / f"broker-{node_id}-{time.monotonic_ns()}" / f"{TOPIC}-0"
    shutil.copytree(cluster.node(node_id).data_dir / f"{TOPIC}-0", copy)
    log = PartitionLog.open(copy, LogConfig(cleanup_policy=("compact",)), now_ms=0)
    try:
        found: dict[str, str | None] = {}
        offset = log.log_start_offset
        while offset < log.log_end_offset:
            data = log.read(offset, 1 << 20)
            if not data:
                break
            for batch in iter_batches(data):
                for record in batch.records():
                    found[(record.key or b"").decode()] = None if record.value is None else record.value.decode()
                offset = batch.last_offset + 1
        return {key: value for key, value in found.items() if value is not None}
    finally:
        log.abandon()


@pytest.mark.spark
@pytest.mark.timeout(1200)  # a cluster, then a Spark analysis: minutes on a busy 2-core machine
def test_analyze_finds_every_latest_value_of_a_compacted_topic(cluster: Cluster, spark, tmp_path: Path) -> None:  # noqa: ANN001
    """The analysis runs in the test run's shared Spark session (the `analyze` command is the same function, and a
    JVM of its own would cost a start and a cold compiler)."""
    topic, run = "analyzed", str(cluster.run_dir)
    configs = ["cleanup.policy=compact", "segment.bytes=4096", "min.cleanable.dirty.ratio=0.01"]
    created = minikafka(
        "topics",
        "create",
        topic,
        "--partitions",
        "1",
        "--replication-factor",
        "3",
        "--dir",
        run,
        *[arg for config in configs for arg in ("--config", config)],
    )
    assert created.returncode == 0, created.stderr
    history = cluster.run_dir / "history"
    history.mkdir(exist_ok=True)
    produced = minikafka(
        "produce",
        topic,
        "--acks",
        "all",
        "--num-records",
        "1500",
        "--record-size",
        "20",
        "--key-count",
        "30",
        "--batch-size",
        "1024",
        "--history",
        str(history / "produce-compacted.jsonl"),
        "--dir",
        run,
    )
    assert produced.returncode == 0, produced.stderr
    for broker in cluster.brokers:
        eventually(
            lambda b=broker: [e for e in _events(cluster, b.node_id, "log_cleaned") if e["partition"] == f"{topic}-0"],
            60,
            f"broker {broker.node_id} cleaning {topic}",
        )
    consumed = minikafka("consume", topic, "--from-beginning", "--json", "--timeout-ms", "5000", "--dir", run)
    assert consumed.returncode == 0, consumed.stderr
    (history / "consume-final.jsonl").write_text(consumed.stdout)
    read = [json.loads(line) for line in consumed.stdout.splitlines() if '"offset"' in line]
    assert len(read) < 1500  # compacted
    summary = analyze(spark, cluster.run_dir, tmp_path)
    verdicts = {v["name"]: v for v in summary["invariants"]}
    kept = verdicts["CompactedLatestValueKept"]
    assert kept["verdict"] == "pass" and kept["checked"] == 30, kept
    assert verdicts["NoCommittedRecordLost"]["verdict"] == "pass", verdicts["NoCommittedRecordLost"]
    assert verdicts["LogMatching"]["verdict"] == "pass", verdicts["LogMatching"]
    assert summary["compaction"]["cleanings"] > 0
    assert summary["compaction"]["bytes_after"] < summary["compaction"]["bytes_before"]
