"""Dynamic configs with real processes, driven by confluent_kafka's AdminClient through the brokers' Kafka
listeners: IncrementalAlterConfigs writes ConfigRecords that DescribeConfigs then reports with Kafka's sources, the
brokers apply them at once, Kafka's errors for bad alters, and the values survive a controller failover (they are
records in the metadata log, not controller memory). Also `minikafka configs`, as kafka-configs, and a topic's
compression.type recompressing what producers send."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster

from minikafka.client.admin import AdminClient
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster
from minikafka.storage.dump_log import dump_log

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
admin_module = pytest.importorskip("confluent_kafka.admin")

TOPIC = "configured"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("dynamic-configs"), 3, 3) as started:
        admin = admin_module.AdminClient({"bootstrap.servers": started.kafka_bootstrap_servers})
        admin.create_topics([admin_module.NewTopic(TOPIC, num_partitions=1, replication_factor=3)])[TOPIC].result(30)
        eventually(lambda: TOPIC in admin.list_topics(timeout=10).topics, 20, "the topic in metadata")
        yield started


def _admin(cluster: Cluster) -> object:
    return admin_module.AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})


def _alter(admin: object, resource_type: object, name: str, *ops: tuple[str, object, str | None]) -> object:
    entries = [admin_module.ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops]
    resource = admin_module.ConfigResource(resource_type, name, incremental_configs=entries)
    return admin.incremental_alter_configs([resource])[resource]  # type: ignore[attr-defined]


def _alter_cluster_default(cluster: Cluster, key: str, op: int, value: str | None) -> tuple[int, str | None]:
    """The cluster-wide broker resource (the empty name), which confluent-kafka cannot name: a raw
    IncrementalAlterConfigs v1 through a broker's Kafka listener."""
    from kio.schema.incremental_alter_configs.v1 import request as incremental

    from minikafka.client.kafka_wire_client import KafkaWireClient

    config = incremental.AlterableConfig(name=key, config_operation=op, value=value)
    resource = incremental.AlterConfigsResource(resource_type=4, resource_name="", configs=(config,))
    body = incremental.IncrementalAlterConfigsRequest(resources=(resource,), validate_only=False)

    async def send() -> object:
        client = KafkaWireClient(cluster.kafka_bootstrap_servers.split(","))
        try:
            return await client.any_broker(body)
        finally:
            await client.close()

    [answer] = asyncio.run(send()).responses  # type: ignore[attr-defined]
    return int(answer.error_code.value), answer.error_message


def _described(admin: object, resource_type: object, name: str) -> dict[str, object]:
    """The resource's configs. A topic created a moment ago may not be in the answering broker's metadata yet (it
    learns it from the metadata log after the controller answered CreateTopics, as in Kafka): asked again then."""
    resource = admin_module.ConfigResource(resource_type, name)

    def ask() -> dict[str, object] | None:
        try:
            return admin.describe_configs([resource])[resource].result(30)  # type: ignore[attr-defined,no-any-return]
        except confluent_kafka.KafkaException as error:
            if error.args[0].code() != confluent_kafka.KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
            return None

    return eventually(ask, 30, f"the configs of {name}")


def _error(future: object) -> int:
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        future.result(30)  # type: ignore[attr-defined]
    return raised.value.args[0].code()


def test_alter_then_describe_shows_value_and_source_and_survives_a_controller_failover(cluster: Cluster) -> None:
    admin, ops, sources = _admin(cluster), admin_module.AlterConfigOpType, admin_module.ConfigSource
    topic_type = admin_module.ResourceType.TOPIC
    _alter(
        admin, topic_type, TOPIC, ("retention.ms", ops.SET, "3600000"), ("segment.bytes", ops.SET, "1048576")
    ).result(30)
    assert _alter_cluster_default(cluster, "log.retention.bytes", 0, "1073741824") == (0, None)

    def shows_them() -> dict[str, object] | None:
        configs = _described(admin, topic_type, TOPIC)
        return configs if configs["retention.ms"].value == "3600000" else None

    configs = eventually(shows_them, 20, "the altered topic configs described")
    assert configs["retention.ms"].source == sources.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].value == "1048576"
    bytes_entry = configs["retention.bytes"]
    assert (bytes_entry.value, bytes_entry.source) == ("1073741824", sources.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    # With the ELR on, the active controller wrote its min.insync.replicas as the cluster default.
    assert configs["min.insync.replicas"].source == sources.DYNAMIC_DEFAULT_BROKER_CONFIG.value

    controllers = AdminClient(cluster.bootstrap_controllers, [], timeout_s=5, tls=cluster.admin_tls)
    leader = eventually(lambda: (q := controllers.describe_quorum())["leader_id"] >= 0 and q, 20, "a leader")
    Faults(cluster).kill(leader["leader_id"])
    try:
        new = eventually(
            lambda: (q := controllers.describe_quorum())["leader_id"] not in (-1, leader["leader_id"]) and q,
            30,
            "a new active controller",
        )
        assert new["leader_epoch"] > leader["leader_epoch"]
        [described] = eventually(
            lambda: controllers.describe_dynamic_configs([(2, TOPIC)]), 30, "the new controller's configs"
        )
        assert dict(described.configs) == {"retention.ms": "3600000", "segment.bytes": "1048576"}
        # The new active controller alters on top of them: a delete keeps the other key.
        eventually(
            lambda: _alter(admin, topic_type, TOPIC, ("segment.bytes", ops.DELETE, None)).result(30) or True,
            30,
            "an alter through the new controller",
        )
        configs = eventually(
            lambda: (c := _described(admin, topic_type, TOPIC))["segment.bytes"].source != 1 and c, 20, "deleted"
        )
        assert configs["retention.ms"].value == "3600000"
    finally:
        Faults(cluster).start(leader["leader_id"])
        controllers.close()


def test_kafkas_errors_and_validate_only(cluster: Cluster) -> None:
    admin, ops = _admin(cluster), admin_module.AlterConfigOpType
    topic_type, broker_type = admin_module.ResourceType.TOPIC, admin_module.ResourceType.BROKER
    errors = confluent_kafka.KafkaError
    assert _error(_alter(admin, topic_type, TOPIC, ("no.such.config", ops.SET, "1"))) == errors.INVALID_CONFIG
    assert _error(_alter(admin, topic_type, TOPIC, ("retention.ms", ops.SET, "soon"))) == errors.INVALID_CONFIG
    assert _error(_alter(admin, topic_type, TOPIC, ("compression.zstd.level", ops.SET, "23"))) == errors.INVALID_CONFIG
    assert _error(_alter(admin, broker_type, "1", ("log.dirs", ops.SET, "/x"))) == errors.INVALID_REQUEST
    assert _error(_alter(admin, broker_type, "2", ("min.insync.replicas", ops.SET, "2"))) == errors.INVALID_CONFIG
    code, message = _alter_cluster_default(cluster, "min.insync.replicas", 1, None)
    assert (code, message) == (
        errors.INVALID_CONFIG,
        "Cluster-level min.insync.replicas cannot be removed while ELR is enabled.",
    )
    entry = admin_module.ConfigEntry("flush.ms", "1000", incremental_operation=ops.SET)
    resource = admin_module.ConfigResource(topic_type, TOPIC, incremental_configs=[entry])
    admin.incremental_alter_configs([resource], validate_only=True)[resource].result(30)  # type: ignore[attr-defined]
    assert (
        _described(admin, topic_type, TOPIC)["flush.ms"].source != admin_module.ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    )


def test_a_broker_applies_a_new_max_message_bytes_at_once(cluster: Cluster) -> None:
    admin, ops = _admin(cluster), admin_module.AlterConfigOpType
    name = "small-messages"
    admin.create_topics([admin_module.NewTopic(name, num_partitions=1, replication_factor=1)])[name].result(30)
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all"})
    outcomes: list[object] = []

    def send() -> object:
        outcomes.clear()
        producer.produce(name, b"x" * 4000, on_delivery=lambda e, m: outcomes.append(e.code() if e else m.offset()))
        producer.flush(30)
        return outcomes[0]

    assert eventually(lambda: send() == 0 or None, 20, "a first write") is True
    _alter(admin, admin_module.ResourceType.TOPIC, name, ("max.message.bytes", ops.SET, "1000")).result(30)
    eventually(lambda: send() == confluent_kafka.KafkaError.MSG_SIZE_TOO_LARGE or None, 20, "the write refused")


def test_a_topic_s_compression_type_recompresses_what_producers_send(cluster: Cluster) -> None:
    """gzip batches to an lz4 topic (at lz4 level 12) are stored lz4 on its three replicas, then snappy once the
    topic's compression.type is altered; librdkafka reads every record back."""
    admin, ops, name = _admin(cluster), admin_module.AlterConfigOpType, "recompressed"
    configs = {"compression.type": "lz4", "compression.lz4.level": "12"}
    topic = admin_module.NewTopic(name, num_partitions=1, replication_factor=3, config=configs)
    admin.create_topics([topic])[name].result(30)
    described = _described(admin, admin_module.ResourceType.TOPIC, name)
    levels = {key: (described[key].value, described[key].source) for key in described if key.endswith(".level")}
    assert levels == {
        "compression.gzip.level": ("-1", admin_module.ConfigSource.DEFAULT_CONFIG.value),
        "compression.lz4.level": ("12", admin_module.ConfigSource.DYNAMIC_TOPIC_CONFIG.value),
        "compression.zstd.level": ("3", admin_module.ConfigSource.DEFAULT_CONFIG.value),
    }
    bootstrap = cluster.kafka_bootstrap_servers
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "acks": "all", "compression.type": "gzip"})
    values = [f"value-{i}-" + "compressible " * 8 for i in range(40)]

    def send(batch: list[str]) -> None:
        for value in batch:
            producer.produce(name, value=value.encode(), partition=0)
        assert producer.flush(30) == 0

    send(values[:20])
    eventually(lambda: _stored_codecs(cluster, name) == {"lz4"} or None, 20, "the replicas' batches lz4")
    _alter(admin, admin_module.ResourceType.TOPIC, name, ("compression.type", ops.SET, "snappy")).result(30)

    def snappy_stored() -> bool:
        send(values[20:])  # again until the leader applied the new value: duplicates are fine here
        return "snappy" in _stored_codecs(cluster, name)

    eventually(snappy_stored, 30, "a batch stored snappy")
    assert _stored_codecs(cluster, name) <= {"lz4", "snappy"}
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "recompressed-reader"})
    consumer.assign([confluent_kafka.TopicPartition(name, 0, 0)])
    read: list[str] = []

    def all_read() -> bool:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            read.append(message.value().decode())
        return set(read) == set(values)

    eventually(all_read, 30, "every record read", interval_s=0)
    consumer.close()
    assert read[:20] == values[:20]


def test_message_timestamp_configs_bound_and_stamp_what_producers_send(cluster: Cluster) -> None:
    """Kafka 4's message.timestamp.after.max.ms default (one hour) refuses a record stamped two hours ahead with
    INVALID_TIMESTAMP; once the topic is altered to LogAppendTime, the same record is taken and librdkafka's delivery
    report and consumer both see the leader's clock, as LOG_APPEND_TIME."""
    admin, ops, name = _admin(cluster), admin_module.AlterConfigOpType, "stamped-by-leader"
    admin.create_topics([admin_module.NewTopic(name, num_partitions=1, replication_factor=3)])[name].result(30)
    described = _described(admin, admin_module.ResourceType.TOPIC, name)
    assert (described["message.timestamp.type"].value, described["message.timestamp.after.max.ms"].value) == (
        "CreateTime",
        "3600000",
    )
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all"})
    ahead = int(time.time() * 1000) + 2 * 3_600_000

    def send() -> tuple[object, object]:
        reports: list[tuple[object, object]] = []
        producer.produce(name, b"ahead", partition=0, timestamp=ahead, on_delivery=lambda e, m: reports.append((e, m)))
        producer.flush(30)
        return reports[0]

    def refused() -> bool:
        error, _ = send()
        return error is not None and error.code() == confluent_kafka.KafkaError.INVALID_TIMESTAMP  # type: ignore[attr-defined]

    eventually(refused, 20, "the record refused with INVALID_TIMESTAMP")
    topic = admin_module.ResourceType.TOPIC
    _alter(admin, topic, name, ("message.timestamp.type", ops.SET, "LogAppendTime")).result(30)
    before = int(time.time() * 1000)
    delivered = eventually(lambda: (lambda e, m: m if e is None else None)(*send()), 20, "the record taken")
    kind, stamp = delivered.timestamp()  # type: ignore[attr-defined]
    assert kind == confluent_kafka.TIMESTAMP_LOG_APPEND_TIME
    assert before - 1000 <= stamp <= int(time.time() * 1000) + 1000
    consumer = confluent_kafka.Consumer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": "stamps"})
    consumer.assign([confluent_kafka.TopicPartition(name, 0, 0)])

    def read() -> object:
        message = consumer.poll(0.5)
        return message if message is not None and message.error() is None else None

    message = eventually(read, 30, "the record read", interval_s=0)
    consumer.close()
    assert message.timestamp() == (confluent_kafka.TIMESTAMP_LOG_APPEND_TIME, stamp)  # type: ignore[attr-defined]


def _stored_codecs(cluster: Cluster, topic: str) -> set[str]:
    """The codecs of the batches in the partition's segments, on every broker holding it."""
    segments = sorted(cluster.run_dir.glob(f"**/{topic}-0/*.log"))
    assert len({segment.parent for segment in segments}) == 3, segments
    return {batch["compression"] for segment in segments for batch in dump_log(segment)["batches"]}


def test_minikafka_configs_alters_and_describes_like_kafka_configs(cluster: Cluster) -> None:
    run = ["--dir", str(cluster.run_dir)]
    added = minikafka(
        "configs",
        "--alter",
        "--entity-type",
        "brokers",
        "--entity-default",
        "--add-config",
        "log.retention.ms=7200000",
        *run,
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout.strip() == "Completed updating default config for brokers in the cluster."
    described = minikafka("configs", "--describe", "--entity-type", "brokers", "--entity-default", "--json", *run)
    assert json.loads(described.stdout)["configs"]["log.retention.ms"] == "7200000"
    refused = minikafka(
        "configs", "--alter", "--entity-type", "topics", "--entity-name", TOPIC, "--add-config", "bogus=1", *run
    )
    assert refused.returncode != 0 and "INVALID_CONFIG" in refused.stderr and "Traceback" not in refused.stderr
    # A broker answers from its metadata, which learns the controller's commit a moment later: asked until then.
    # (The topic may have a retention.ms of its own, from the test above: the cluster default is then its synonym.)
    default = "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000}"

    def every_config() -> list[str] | None:
        every = minikafka("configs", "--describe", "--all", "--entity-type", "topics", "--entity-name", TOPIC, *run)
        assert every.returncode == 0, every.stderr
        lines = every.stdout.splitlines()
        [retention] = [line for line in lines if line.startswith("  retention.ms=")]
        return lines if retention.endswith(default) and " sensitive=false synonyms={" in retention else None

    lines = eventually(every_config, 30, "the topic's configs with the cluster default")
    assert lines[0] == f"All configs for topic {TOPIC} are:"
    assert "  message.timestamp.type=CreateTime sensitive=false" in "\n".join(lines)

    def broker_configs() -> dict[str, dict[str, str]] | None:
        described = minikafka(
            "configs", "--describe", "--all", "--entity-type", "brokers", "--entity-name", "2", "--json", *run
        )
        configs = {entry["name"]: entry for entry in json.loads(described.stdout)["configs"]}
        return configs if configs["log.retention.ms"]["source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG" else None

    configs = eventually(broker_configs, 30, "broker 2's configs with the cluster default")
    assert (configs["node.id"]["value"], configs["log.retention.hours"]["source"]) == ("2", "DEFAULT_CONFIG")
