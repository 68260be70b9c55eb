"""The remaining admin APIs through the brokers' Kafka listeners, driven by real clients (confluent-kafka's
AdminClient, kafka-python) and minikafka's Kafka-like tools against one 3+3 cluster of real processes:
DeleteRecords (and `minikafka delete-records`), DescribeTopicPartitions, DescribeCluster, DescribeLogDirs (and
`minikafka log-dirs --describe`), DescribeQuorum through a broker, DescribeProducers, CreatePartitions with an
explicit assignment, ListOffsets v10 (kafka-python infers Kafka 4.0)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import eventually, minikafka

from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster, is_alive, kill

pytestmark = pytest.mark.integration
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
admin_module = pytest.importorskip("confluent_kafka.admin")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Brokers 0, 1, 2 (`cluster up --broker-ids 0,1,2`), as Kafka's docker images and kafkajs's tests number them."""
    started = cluster_commands.up(tmp_path_factory.mktemp("kafka-admin-apis"), 3, 3, {}, 60, broker_ids=[0, 1, 2])
    try:
        yield started
    finally:
        cluster_commands.down(started, timeout_s=10)
        for pid in started.pids.values():
            if is_alive(pid):
                kill(pid)


def _admin(cluster: Cluster) -> object:
    return admin_module.AdminClient({"bootstrap.servers": cluster.kafka_bootstrap_servers})


def _topic_with_records(cluster: Cluster, name: str, partitions: int, records: int) -> object:
    admin = _admin(cluster)
    admin.create_topics([admin_module.NewTopic(name, num_partitions=partitions, replication_factor=3)])[name].result(30)
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.kafka_bootstrap_servers, "acks": "all"})
    for partition in range(partitions):
        for i in range(records):
            producer.produce(name, value=b"r%d" % i, partition=partition)
    assert producer.flush(30) == 0
    return admin


def _earliest(admin: object, name: str, partition: int) -> int:
    tp = confluent_kafka.TopicPartition(name, partition)
    return admin.list_offsets({tp: admin_module.OffsetSpec.earliest()})[tp].result(30).offset


def _follower_log_start(cluster: Cluster, name: str, partition: int, offset: int) -> list[int]:
    """Broker ids whose log of the partition started at `offset` on their leader's word (their event logs)."""
    moved = []
    for spec in cluster.nodes:
        if spec.role != "broker" or not spec.events_path.exists():
            continue
        for line in spec.events_path.read_text().splitlines():
            event = json.loads(line)
            if (
                event.get("event") == "log_segments_deleted"
                and event.get("partition") == f"{name}-{partition}"
                and event.get("reason") == "leader_offset_incremented"
                and event.get("log_start_offset") == offset
            ):
                moved.append(spec.node_id)
    return moved


def test_delete_records_moves_the_log_start_on_the_leader_and_its_followers(cluster: Cluster) -> None:
    admin = _topic_with_records(cluster, "trimmed", 2, 10)
    tps = [confluent_kafka.TopicPartition("trimmed", 0, 4), confluent_kafka.TopicPartition("trimmed", 1, -1)]
    futures = admin.delete_records(tps)
    low = {tp.partition: future.result(30).low_watermark for tp, future in futures.items()}
    assert low == {0: 4, 1: 10}  # -1: the high watermark
    assert _earliest(admin, "trimmed", 0) == 4 and _earliest(admin, "trimmed", 1) == 10
    eventually(lambda: len(_follower_log_start(cluster, "trimmed", 0, 4)) == 2, 30, "both followers at offset 4")

    servers = cluster.kafka_bootstrap_servers
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "trimmed"})
    consumer.assign([confluent_kafka.TopicPartition("trimmed", 0, confluent_kafka.OFFSET_BEGINNING)])
    first = eventually(lambda: consumer.poll(1), 30, "a record after the deleted ones")
    consumer.close()
    assert first.error() is None and first.offset() == 4 and first.value() == b"r4"

    beyond = admin.delete_records([confluent_kafka.TopicPartition("trimmed", 0, 11)])
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        next(iter(beyond.values())).result(30)
    assert raised.value.args[0].code() == confluent_kafka.KafkaError.OFFSET_OUT_OF_RANGE


def test_the_delete_records_command_takes_kafkas_offset_json_file(cluster: Cluster, tmp_path: Path) -> None:
    admin = _topic_with_records(cluster, "trimmed-by-tool", 1, 6)
    spec = tmp_path / "offsets.json"
    wanted = [{"topic": "trimmed-by-tool", "partition": 0, "offset": 3}]
    spec.write_text(json.dumps({"partitions": wanted, "version": 1}))
    done = minikafka(
        "delete-records", "--offset-json-file", str(spec), "--bootstrap-server", cluster.kafka_bootstrap_servers
    )
    assert done.returncode == 0, done.stderr
    assert "partition: trimmed-by-tool-0\tlow_watermark: 3" in done.stdout
    assert _earliest(admin, "trimmed-by-tool", 0) == 3

    spec.write_text(json.dumps({"partitions": [{"topic": "trimmed-by-tool", "partition": 0, "offset": 99}]}))
    refused = minikafka(
        "delete-records", "--offset-json-file", str(spec), "--bootstrap-server", cluster.kafka_bootstrap_servers
    )
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "error: OFFSET_OUT_OF_RANGE" in refused.stdout


kafka_admin = pytest.importorskip("kafka.admin", reason="kafka-python is in the dev extra")


def _kafka_python_admin(cluster: Cluster) -> object:
    return kafka_admin.KafkaAdminClient(bootstrap_servers=cluster.kafka_bootstrap_servers)


def test_describe_topic_partitions_pages_with_a_cursor_through_kafka_python(cluster: Cluster) -> None:
    creator = _admin(cluster)
    creator.create_topics([admin_module.NewTopic("paged", num_partitions=3, replication_factor=3)])["paged"].result(30)
    admin = _kafka_python_admin(cluster)
    try:
        first = eventually(lambda: _described_page(admin, None), 30, "the topic's first page")
        assert [p["partition_index"] for p in first["topics"][0]["partitions"]] == [0, 1]
        assert first["next_cursor"] == {"topic_name": "paged", "partition_index": 2}
        second = admin.describe_topic_partitions(["paged"], response_partition_limit=2, cursor=first["next_cursor"])
        [topic] = second["topics"]
        assert [p["partition_index"] for p in topic["partitions"]] == [2] and second["next_cursor"] is None
        assert all(len(p["isr_nodes"]) == 3 and p["leader_id"] >= 0 for p in topic["partitions"])
    finally:
        admin.close()


def _described_page(admin: object, cursor: dict | None) -> dict | None:
    page = admin.describe_topic_partitions(["paged"], response_partition_limit=2, cursor=cursor)
    partitions = page["topics"][0]["partitions"]
    return page if page["topics"][0]["error_code"] == 0 and all(p["leader_id"] >= 0 for p in partitions) else None


def test_describe_cluster_through_kafka_python_and_librdkafka(cluster: Cluster) -> None:
    admin = _kafka_python_admin(cluster)
    try:
        described = admin.describe_cluster()
    finally:
        admin.close()
    brokers = [spec.node_id for spec in cluster.nodes if spec.role == "broker"]
    assert sorted(b["broker_id"] for b in described["brokers"]) == brokers
    assert described["cluster_id"] and described["controller_id"] in brokers
    rdkafka_admin = _admin(cluster)
    librdkafka = rdkafka_admin.describe_cluster().result(30)
    assert sorted(node.id for node in librdkafka.nodes) == brokers and librdkafka.cluster_id == described["cluster_id"]


def test_log_dirs_describe_shows_each_brokers_partition_logs(cluster: Cluster) -> None:
    _topic_with_records(cluster, "sized", 1, 5)
    brokers = [spec.node_id for spec in cluster.nodes if spec.role == "broker"]

    def described() -> dict | None:
        servers = cluster.kafka_bootstrap_servers
        done = minikafka("log-dirs", "--describe", "--topic-list", "sized", "--bootstrap-server", servers)
        assert done.returncode == 0, done.stderr
        document = json.loads(done.stdout.splitlines()[-1])
        sized = [p for b in document["brokers"] for d in b["logDirs"] for p in d["partitions"]]
        return document if len(sized) == 3 and all(p["size"] > 0 for p in sized) else None

    document = eventually(described, 30, "the topic's three replicas, written")
    assert [b["broker"] for b in document["brokers"]] == brokers
    assert all(d["error"] is None and d["logDir"].startswith("/") for b in document["brokers"] for d in b["logDirs"])

    admin = _kafka_python_admin(cluster)
    try:
        answered = admin.describe_log_dirs(topic_partitions=["sized"], brokers=[brokers[0]])
    finally:
        admin.close()
    assert "sized" in json.dumps(answered, default=str)


def test_describe_quorum_through_each_broker(cluster: Cluster) -> None:
    import asyncio

    from minikafka.client.kafka_wire_client import KafkaConnection, nested, request_class

    cls = request_class(55, 2)
    body = cls(
        topics=(
            nested(cls, "TopicData")(
                topic_name="__cluster_metadata", partitions=(nested(cls, "PartitionData")(partition_index=0),)
            ),
        )
    )
    controllers = sorted(spec.node_id for spec in cluster.nodes if spec.role == "controller")
    brokers = sorted(spec.node_id for spec in cluster.nodes if spec.role == "broker")

    async def ask(address: str) -> object:
        connection = KafkaConnection(address, 30)
        try:
            return await connection.send(body)
        finally:
            await connection.close()

    for spec in cluster.nodes:
        if spec.role != "broker":
            continue
        response = asyncio.run(ask(spec.kafka_address))
        assert int(response.error_code.value) == 0, response.error_message
        [partition] = response.topics[0].partitions
        assert partition.leader_id in controllers and partition.high_watermark > 0
        assert sorted(v.replica_id for v in partition.current_voters) == controllers
        assert sorted(o.replica_id for o in partition.observers) == brokers
        assert sorted(n.node_id for n in response.nodes) == controllers


def test_describe_producers_through_kafka_python(cluster: Cluster) -> None:
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "enable.idempotence": True}
    )
    creator = _admin(cluster)
    creator.create_topics([admin_module.NewTopic("produced", 1, 3)])["produced"].result(30)
    for i in range(3):
        producer.produce("produced", value=b"p%d" % i, partition=0)
    assert producer.flush(30) == 0
    admin = _kafka_python_admin(cluster)
    try:
        from kafka import TopicPartition

        states = admin.describe_producers([TopicPartition("produced", 0)])
    finally:
        admin.close()
    [state] = states.values()
    [active] = state.active_producers
    assert active.producer_id >= 0 and active.last_sequence == 2


def test_kafka_python_sees_kafka_4_0_and_lists_offsets_at_its_version(cluster: Cluster) -> None:
    import kafka

    admin = _kafka_python_admin(cluster)
    try:
        assert admin._client.check_version() == (4, 0)  # what kafka-python infers from the advertised versions
    finally:
        admin.close()
    _topic_with_records(cluster, "listed", 1, 4)
    consumer = kafka.KafkaConsumer(bootstrap_servers=cluster.kafka_bootstrap_servers)
    try:
        tp = kafka.TopicPartition("listed", 0)
        assert consumer.beginning_offsets([tp]) == {tp: 0} and consumer.end_offsets([tp]) == {tp: 4}
    finally:
        consumer.close()


def test_create_partitions_with_an_explicit_assignment_of_brokers_0_1_2(cluster: Cluster) -> None:
    admin = _admin(cluster)
    admin.create_topics([admin_module.NewTopic("grown", num_partitions=1, replication_factor=3)])["grown"].result(30)
    grow = admin_module.NewPartitions("grown", 3, replica_assignment=[[0, 1, 2], [2, 0, 1]])
    admin.create_partitions([grow])["grown"].result(30)
    topic = eventually(lambda: _grown(admin), 30, "three partitions")
    assert [topic.partitions[p].replicas for p in (1, 2)] == [[0, 1, 2], [2, 0, 1]]

    bad = admin.create_partitions([admin_module.NewPartitions("grown", 4, replica_assignment=[[0, 1, 7]])])
    with pytest.raises(confluent_kafka.KafkaException) as raised:
        bad["grown"].result(30)
    assert raised.value.args[0].code() == confluent_kafka.KafkaError.INVALID_REPLICA_ASSIGNMENT


def _grown(admin: object) -> object | None:
    topic = admin.list_topics("grown", timeout=10).topics.get("grown")
    return topic if topic is not None and len(topic.partitions) == 3 else None


def test_the_log_start_survives_every_replica_being_killed(cluster: Cluster) -> None:
    """Last in this module: it kills and restarts each broker in turn. The log start each replica moved to (the
    leader by DeleteRecords, the followers from its Fetch answers) is read back from its checkpoint."""
    from minikafka.deploy.faults import Faults

    admin = _topic_with_records(cluster, "kept-start", 1, 10)
    next(iter(admin.delete_records([confluent_kafka.TopicPartition("kept-start", 0, 6)]).values())).result(30)
    eventually(lambda: len(_follower_log_start(cluster, "kept-start", 0, 6)) == 2, 30, "both followers at offset 6")
    faults = Faults(cluster)
    for broker in [spec.node_id for spec in cluster.nodes if spec.role == "broker"]:
        starts = _caught_up_count(cluster, broker)
        faults.kill(broker)
        faults.start(broker)
        # Metadata read at once still names the killed replica in the ISR: wait for its new start to be registered
        # and caught up first, or the next broker is killed before this one rejoined.
        eventually(lambda b=broker, n=starts: _caught_up_count(cluster, b) > n, 60, f"broker {broker} registered again")
        eventually(lambda: _full_isr(admin, "kept-start"), 60, f"broker {broker} back in the ISR")
    assert eventually(lambda: _earliest(admin, "kept-start", 0) == 6, 30, "the partition starting at 6")


def _caught_up_count(cluster: Cluster, broker: int) -> int:
    """How many starts of `broker` the controller has told it caught up (one per start)."""
    path = cluster.node(broker).events_path
    if not path.exists():
        return 0
    return path.read_text().count('"event":"broker_metadata_caught_up"')


def _full_isr(admin: object, name: str) -> bool:
    topic = admin.list_topics(name, timeout=10).topics[name]
    return all(len(p.isrs) == 3 and p.leader >= 0 for p in topic.partitions.values())
