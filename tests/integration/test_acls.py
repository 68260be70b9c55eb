"""Kafka's ACLs on a real SASL cluster with the StandardAuthorizer on: the admin (PLAIN, a super user) grants alice
(SCRAM-SHA-512) what she needs with `minikafka acls`, as kafka-acls would; until then, and outside it, she is refused
with Kafka's errors on the Kafka listener and on the gRPC client API, and cannot continue the admin's idempotent
stream or read another group's offsets. One cluster (a controller and a broker) for the module, and one of three
controllers for the failover test."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster

from minikafka.client.sasl_channel import authenticate_sync
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.certificates import ca_certificate_path
from minikafka.common.grpc_sasl import SESSION_METADATA_KEY
from minikafka.common.grpc_support import sync_channel
from minikafka.common.record_batch import Record, build_batch
from minikafka.common.tls import TlsFiles
from minikafka.deploy import cluster_commands
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster
from minikafka.pb import broker_pb2, broker_pb2_grpc

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="the run's CA is made with openssl"),
]
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
admin_module = pytest.importorskip("confluent_kafka.admin")

TOPIC, SECRET = "orders", "payroll"
TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED, CLUSTER_AUTHORIZATION_FAILED = 29, 30, 31


OVERRIDES = {
    "listener.security.protocol.map": "PLAINTEXT:SASL_SSL,GRPC:GRPC_SASL_SSL,BROKER:GRPC,CONTROLLER:GRPC",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
    # User:admin: a super user (super.users' default); bob has no ACL at all
    "sasl.plain.users": "admin:admin-secret,bob:bob-secret",
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "offsets.topic.replication.factor": "1",
}


@contextmanager
def _acl_cluster(run_dir: Path, controllers: int) -> Iterator[Cluster]:
    """A SASL cluster with one broker, the topics orders and payroll, and alice's SCRAM credential."""
    with running_cluster(run_dir, controllers, 1, **OVERRIDES) as started:
        with cluster_commands.admin_for(started, timeout_s=10) as admin:
            for name in (TOPIC, SECRET):
                admin.create_topic(name, partitions=1, replication_factor=1)
        credential = "SCRAM-SHA-512=[iterations=8192,password=alice-secret]"
        altered = minikafka(
            "configs", "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", credential,
            "--dir", str(started.run_dir), timeout_s=60,
        )  # fmt: skip
        assert altered.returncode == 0, altered.stderr
        yield started


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with _acl_cluster(tmp_path_factory.mktemp("acls"), 1) as started:
        yield started


def _config(cluster: Cluster, user: str) -> dict:
    login = {"admin": ("PLAIN", "admin-secret"), "alice": ("SCRAM-SHA-512", "alice-secret")}[user]
    return {
        "bootstrap.servers": cluster.kafka_bootstrap_servers,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": login[0],
        "sasl.username": user,
        "sasl.password": login[1],
        "ssl.ca.location": str(ca_certificate_path(cluster.certs_dir)),
    }


def _produce(cluster: Cluster, user: str, topic: str, values: list[bytes], **settings: object) -> list[object]:
    """Each record's delivery error (None when acknowledged)."""
    producer = confluent_kafka.Producer({**_config(cluster, user), "acks": "all", **settings})
    outcomes: list[object] = []
    for value in values:
        producer.produce(topic, value=value, on_delivery=lambda error, _message: outcomes.append(error))
    assert producer.flush(30) == 0
    return outcomes


def _acls(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    return minikafka("acls", *args, "--dir", str(cluster.run_dir), timeout_s=60)


def _allow_alice(cluster: Cluster, operation: str, topic: str) -> None:
    added = _acls(cluster, "--add", "--allow-principal", "User:alice", "--operation", operation, "--topic", topic)
    assert added.returncode == 0, added.stderr


def _values(cluster: Cluster, topic: str) -> list[bytes]:
    """Everything in the topic, read as the admin."""
    settings = {**_config(cluster, "admin"), "group.id": "reader", "enable.auto.commit": False}
    consumer = confluent_kafka.Consumer(settings)
    consumer.assign([confluent_kafka.TopicPartition(topic, 0, confluent_kafka.OFFSET_BEGINNING)])
    low, high = consumer.get_watermark_offsets(confluent_kafka.TopicPartition(topic, 0), timeout=10)
    values: list[bytes] = []
    try:

        def read_all() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                values.append(message.value())
            return len(values) >= high - low

        eventually(read_all, 30, f"{high - low} records of {topic}", interval_s=0)
    finally:
        consumer.close()
    return values


def test_alice_is_refused_until_an_acl_lets_her_write(cluster: Cluster) -> None:
    refused = _produce(cluster, "alice", TOPIC, [b"too early"])
    assert [error.code() for error in refused] == [confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED]  # type: ignore[attr-defined]

    added = _acls(cluster, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", TOPIC)
    assert added.returncode == 0, added.stderr
    assert "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)" in added.stdout
    listed = _acls(cluster, "--list", "--topic", TOPIC, "--json")
    assert json.loads(listed.stdout) == [
        {"resource_type": "TOPIC", "resource_name": TOPIC, "pattern_type": "LITERAL", "principal": "User:alice",
         "host": "*", "operation": "WRITE", "permission_type": "ALLOW"}
    ]  # fmt: skip

    # The broker authorizes from its own image: the ACL applies once it has replayed the record.
    eventually(lambda: _produce(cluster, "alice", TOPIC, [b"allowed"]) == [None], 30, "alice's write acknowledged")
    assert b"allowed" in _values(cluster, TOPIC) and b"too early" not in _values(cluster, TOPIC)
    # Her ACL names one topic: the other stays closed, and she does not see it in the metadata.
    assert [e.code() for e in _produce(cluster, "alice", SECRET, [b"x"])] == [
        confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    ]
    admin = admin_module.AdminClient(_config(cluster, "alice"))
    assert TOPIC in admin.list_topics(timeout=10).topics and SECRET not in admin.list_topics(timeout=10).topics
    assert _denial_events(cluster, "User:alice", SECRET), "an authorization_failed event for alice on payroll"


def _denial_events(cluster: Cluster, principal: str, resource: str) -> list[dict]:
    lines = (cluster.run_dir / "logs" / "broker-1.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines if '"authorization_failed"' in line]
    return [e for e in events if e.get("principal") == principal and e.get("resource_name") == resource]


def test_deny_wins_and_prefixed_acls_cover_their_prefix(cluster: Cluster) -> None:
    with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
        for name in ("eu-orders", "eu-payroll"):
            admin.create_topic(name, partitions=1, replication_factor=1)
    allow = _acls(
        cluster, "--add", "--allow-principal", "User:alice", "--operation", "Write", "--topic", "eu-",
        "--resource-pattern-type", "prefixed",
    )  # fmt: skip
    deny = _acls(cluster, "--add", "--deny-principal", "User:alice", "--operation", "Write", "--topic", "eu-payroll")
    assert allow.returncode == 0 and deny.returncode == 0, allow.stderr + deny.stderr
    eventually(lambda: _produce(cluster, "alice", "eu-orders", [b"eu"]) == [None], 30, "the prefixed ACL applied")
    assert [e.code() for e in _produce(cluster, "alice", "eu-payroll", [b"no"])] == [
        confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    ]
    removed = _acls(
        cluster, "--remove", "--deny-principal", "User:alice", "--operation", "Write", "--topic", "eu-payroll"
    )
    assert removed.returncode == 0 and "eu-payroll" in removed.stdout, removed.stderr
    eventually(lambda: _produce(cluster, "alice", "eu-payroll", [b"now"]) == [None], 30, "the DENY removed")


def _alice_grpc_produce(cluster: Cluster, batch: bytes) -> broker_pb2.ProduceResponse:
    """A raw Produce from alice on the gRPC client API (GRPC_SASL_SSL), in her own SASL session."""
    tls = TlsFiles(ca_certificate_path(cluster.certs_dir))
    with sync_channel(cluster.bootstrap_servers[0], tls) as channel:
        session = authenticate_sync(channel, SaslLogin("SCRAM-SHA-512", "alice", "alice-secret"), 10)
        request = broker_pb2.ProduceRequest(acks=-1, timeout_ms=10000)
        request.topic_data.add(name=TOPIC).partition_data.add(index=0, records=batch)
        stub = broker_pb2_grpc.BrokerStub(channel)
        response: broker_pb2.ProduceResponse = stub.Produce(
            request, timeout=30, metadata=((SESSION_METADATA_KEY, session.token),)
        )
        return response


def test_alice_cannot_continue_the_admins_idempotent_stream(cluster: Cluster) -> None:
    assert _produce(cluster, "admin", TOPIC, [b"admin-0", b"admin-1"], **{"enable.idempotence": True}) == [None] * 2
    kafka = pytest.importorskip("kafka", reason="kafka-python is in the dev extra")
    described = kafka.KafkaAdminClient(
        bootstrap_servers=cluster.kafka_bootstrap_servers, security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
        sasl_plain_username="admin", sasl_plain_password="admin-secret",
        ssl_cafile=str(ca_certificate_path(cluster.certs_dir)),
    )  # fmt: skip
    try:
        [state] = described.describe_producers([kafka.TopicPartition(TOPIC, 0)]).values()
    finally:
        described.close()
    victim = max(state.active_producers, key=lambda p: p.last_sequence)
    before = _values(cluster, TOPIC)
    # alice may write the topic, but not with someone's producer id: she has no IDEMPOTENT_WRITE on the cluster.
    forged = build_batch(
        [Record(b"forged")], producer_id=victim.producer_id, producer_epoch=0, base_sequence=victim.last_sequence + 1
    )
    answer = _alice_grpc_produce(cluster, forged)
    [partition] = answer.responses[0].partition_responses
    assert partition.error_code == CLUSTER_AUTHORIZATION_FAILED, partition
    assert _values(cluster, TOPIC) == before
    # Her own records without a producer id are still welcome on the same path.
    plain = _alice_grpc_produce(cluster, build_batch([Record(b"alice over grpc")]))
    assert plain.responses[0].partition_responses[0].error_code == 0
    assert b"forged" not in _values(cluster, TOPIC)


def test_alice_cannot_read_another_groups_offsets(cluster: Cluster) -> None:
    owner = confluent_kafka.Consumer({**_config(cluster, "admin"), "group.id": "payments"})

    def committed() -> bool:
        try:  # the first commit waits for __consumer_offsets and its coordinator
            owner.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        except confluent_kafka.KafkaException as error:
            assert error.args[0].retriable() or error.args[0].code() == confluent_kafka.KafkaError._WAIT_COORD, error
            return False
        return True

    try:
        eventually(committed, 60, "the admin's commit of group payments")
    finally:
        owner.close()
    admin = admin_module.AdminClient(_config(cluster, "alice"))
    request = confluent_kafka.ConsumerGroupTopicPartitions("payments", [confluent_kafka.TopicPartition(TOPIC, 0)])
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        admin.list_consumer_group_offsets([request])["payments"].result(30)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED
    # Nor join it (READ on the group), whatever she may do on the topic.
    thief = confluent_kafka.Consumer({**_config(cluster, "alice"), "group.id": "payments"})
    errors: list[object] = []
    try:
        thief.subscribe([TOPIC], on_assign=lambda *_args: errors.append("assigned"))

        def refused_join() -> bool:
            message = thief.poll(0.2)
            if message is not None and message.error() is not None:
                errors.append(message.error().code())
            return confluent_kafka.KafkaError.GROUP_AUTHORIZATION_FAILED in errors

        eventually(refused_join, 30, "GROUP_AUTHORIZATION_FAILED on joining", interval_s=0)
    finally:
        thief.close()
    assert "assigned" not in errors


def test_the_gRPC_client_tools_see_only_what_alice_may_describe(cluster: Cluster, tmp_path: Path) -> None:
    _allow_alice(cluster, "Describe", TOPIC)
    properties = tmp_path / "alice.properties"
    properties.write_text(
        f"security.protocol=SASL_SSL\nssl.ca.location={ca_certificate_path(cluster.certs_dir)}\n"
        "sasl.mechanism=SCRAM-SHA-512\nsasl.username=alice\nsasl.password=alice-secret\n"
    )
    where = ["--bootstrap-server", cluster.bootstrap_servers[0], "--command-config", str(properties)]

    def listed() -> list[str]:
        run = subprocess.run(
            [sys.executable, "-m", "minikafka.launcher", "topics", "list", *where],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        return run.stdout.split()

    names = eventually(lambda: TOPIC in (found := listed()) and found, 30, "orders listed for alice")
    assert SECRET not in names


def test_acl_admin_needs_a_super_user_or_alter_on_the_cluster(cluster: Cluster) -> None:
    alice = admin_module.AdminClient(_config(cluster, "alice"))
    binding = admin_module.AclBinding(
        admin_module.ResourceType.TOPIC, SECRET, admin_module.ResourcePatternType.LITERAL, "User:alice", "*",
        admin_module.AclOperation.ALL, admin_module.AclPermissionType.ALLOW,
    )  # fmt: skip
    with pytest.raises(confluent_kafka.KafkaException) as refused:
        alice.create_acls([binding])[binding].result(30)
    assert refused.value.args[0].code() == confluent_kafka.KafkaError.CLUSTER_AUTHORIZATION_FAILED
    admin = admin_module.AdminClient(_config(cluster, "admin"))
    # Kafka's checks of a new ACL: a principal without a type, a prefixed wildcard.
    bad = admin_module.AclBinding(
        admin_module.ResourceType.TOPIC, "*", admin_module.ResourcePatternType.PREFIXED, "User:alice", "*",
        admin_module.AclOperation.READ, admin_module.AclPermissionType.ALLOW,
    )  # fmt: skip
    with pytest.raises(confluent_kafka.KafkaException) as invalid:
        admin.create_acls([bad])[bad].result(30)
    assert invalid.value.args[0].code() == confluent_kafka.KafkaError.INVALID_REQUEST
    acl_filter = admin_module.AclBindingFilter(
        admin_module.ResourceType.ANY, None, admin_module.ResourcePatternType.ANY, "User:alice", None,
        admin_module.AclOperation.ANY, admin_module.AclPermissionType.ANY,
    )  # fmt: skip
    _allow_alice(cluster, "Read", SECRET)
    described = admin.describe_acls(acl_filter).result(30)
    assert any(b.name == SECRET and b.operation == admin_module.AclOperation.READ for b in described)
    # DeleteAcls: a filter that matches nothing deletes nothing and is no error, as in Kafka.
    nothing = admin_module.AclBindingFilter(
        admin_module.ResourceType.TOPIC, "no-such-topic", admin_module.ResourcePatternType.LITERAL, None, None,
        admin_module.AclOperation.ANY, admin_module.AclPermissionType.ANY,
    )  # fmt: skip
    assert admin.delete_acls([nothing])[nothing].result(30) == []


def test_acls_survive_a_restart_of_the_controller_and_the_broker(cluster: Cluster) -> None:
    """They are metadata records: the controller replays them from its log, the broker from its own copy."""
    faults = Faults(cluster)
    faults.stop(1)
    faults.stop(101)
    faults.start(101)
    faults.start(1)
    eventually(lambda: _produce(cluster, "alice", TOPIC, [b"after restart"]) == [None], 60, "alice's ACL after restart")
    assert [e.code() for e in _produce(cluster, "alice", SECRET, [b"still no"])] == [
        confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
    ]
    listed = json.loads(_acls(cluster, "--list", "--principal", "User:alice", "--json").stdout)
    assert any(acl["resource_name"] == TOPIC and acl["operation"] == "WRITE" for acl in listed), listed


def test_acls_survive_a_sigkill_of_the_active_controller(tmp_path: Path) -> None:
    """Three controllers: the one that committed the ACL is killed; the next active one lists it from its own
    replay of the log, and the broker still enforces it. A cluster of its own (the module's has one controller)."""
    with _acl_cluster(tmp_path / "failover", 3) as failover:
        _allow_alice(failover, "Write", TOPIC)
        eventually(lambda: _produce(failover, "alice", TOPIC, [b"before"]) == [None], 30, "alice's ACL applied")
        with cluster_commands.admin_for(failover, timeout_s=5) as admin:
            killed = admin.describe_quorum()["leader_id"]
            Faults(failover).kill(killed)

            def new_leader() -> int | None:
                leader = admin.describe_quorum()["leader_id"]
                return leader if leader not in (-1, killed) else None

            eventually(new_leader, 60, "a new active controller")

        def listed() -> list[dict]:
            run = _acls(failover, "--list", "--principal", "User:alice", "--json")
            return json.loads(run.stdout) if run.returncode == 0 else []

        acls = eventually(listed, 60, "alice's ACL listed by the new active controller")
        assert [(a["resource_name"], a["operation"], a["permission_type"]) for a in acls] == [(TOPIC, "WRITE", "ALLOW")]
        eventually(lambda: _produce(failover, "alice", TOPIC, [b"after"]) == [None], 30, "alice's write after it")
        assert [e.code() for e in _produce(failover, "alice", SECRET, [b"still no"])] == [
            confluent_kafka.KafkaError.TOPIC_AUTHORIZATION_FAILED
        ]


def test_kafka_python_creates_describes_and_deletes_acls(cluster: Cluster) -> None:
    """The steps of kafka-python's own test_create_describe_delete_acls, as the admin."""
    kafka = pytest.importorskip("kafka", reason="kafka-python is in the dev extra")
    from kafka.admin import (
        ACL,
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePattern,
        ResourcePatternFilter,
        ResourceType,
    )

    admin = kafka.KafkaAdminClient(
        bootstrap_servers=cluster.kafka_bootstrap_servers, security_protocol="SASL_SSL", sasl_mechanism="PLAIN",
        sasl_plain_username="admin", sasl_plain_password="admin-secret",
        ssl_cafile=str(ca_certificate_path(cluster.certs_dir)),
    )  # fmt: skip
    try:
        acl = ACL(
            principal="User:test", host="*", operation=ACLOperation.READ, permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(ResourceType.TOPIC, "topic"),
        )  # fmt: skip
        result = admin.create_acls([acl])
        assert len(result["failed"]) == 0 and len(result["succeeded"]) == 1
        acl_filter = ACLFilter(
            principal=None, host="*", operation=ACLOperation.ANY, permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(ResourceType.TOPIC, "topic", ACLResourcePatternType.LITERAL),
        )  # fmt: skip
        acls, error = admin.describe_acls(acl_filter)
        assert error is kafka.errors.NoError and len(acls) == 1
        deleted = admin.delete_acls([acl_filter])
        assert len(deleted) == 1 and len(deleted[0][1]) == 1 and deleted[0][2] is kafka.errors.NoError
        acls, error = admin.describe_acls(acl_filter)
        assert error is kafka.errors.NoError and len(acls) == 0
    finally:
        admin.close()


def test_minikafka_produce_refused_in_one_line(cluster: Cluster, tmp_path: Path) -> None:
    """minikafka's own producer (gRPC client API, idempotent by default), refused on a topic alice may not write."""
    properties = tmp_path / "alice.properties"
    properties.write_text(
        f"security.protocol=SASL_SSL\nssl.ca.location={ca_certificate_path(cluster.certs_dir)}\n"
        "sasl.mechanism=SCRAM-SHA-512\nsasl.username=alice\nsasl.password=alice-secret\n"
    )
    where = ["--bootstrap-server", cluster.bootstrap_servers[0], "--command-config", str(properties)]
    run = subprocess.run(
        [sys.executable, "-m", "minikafka.launcher", "produce", "hr-secrets", "--acks", "all", *where],
        input="refused\n", capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert run.returncode != 0
    assert run.stderr.splitlines() == ["minikafka produce: error: TOPIC_AUTHORIZATION_FAILED (29): topic 'hr-secrets'"]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (Debian/Ubuntu: apt-get install kcat)")
def test_kcat_as_bob_is_refused_where_alice_writes(cluster: Cluster) -> None:
    _allow_alice(cluster, "Write", TOPIC)  # no-op when the first test added it
    security = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "PLAIN",
        "sasl.username": "bob",
        "sasl.password": "bob-secret",
        "ssl.ca.location": str(ca_certificate_path(cluster.certs_dir)),
    }
    options = [item for key, value in security.items() for item in ("-X", f"{key}={value}")]
    command = ["kcat", "-b", cluster.kafka_bootstrap_servers, *options, "-P", "-t", TOPIC, "-X", "acks=all"]
    refused = subprocess.run(command, input="from bob\n", capture_output=True, text=True, timeout=60, check=False)
    assert "Topic authorization failed" in refused.stderr, refused.stderr
    assert b"from bob" not in _values(cluster, TOPIC)


def test_authorized_operations_as_confluent_kafka_describes_them(cluster: Cluster) -> None:
    """include_authorized_operations on describe_topics, describe_cluster and describe_consumer_groups: what
    each principal may do, as Kafka's bit fields (the ACLs imply DESCRIBE and DESCRIBE_CONFIGS)."""
    with cluster_commands.admin_for(cluster, timeout_s=10) as admin:
        admin.create_topic("ops", partitions=1, replication_factor=1)
    for operation, resource in (("Read", ["--topic", "ops"]), ("AlterConfigs", ["--topic", "ops"]),
                                ("Delete", ["--group", "ops-group"])):  # fmt: skip
        added = _acls(cluster, "--add", "--allow-principal", "User:alice", "--operation", operation, *resource)
        assert added.returncode == 0, added.stderr
    Op = admin_module.AclOperation
    alice = admin_module.AdminClient(_config(cluster, "alice"))
    root = admin_module.AdminClient(_config(cluster, "admin"))
    topics = confluent_kafka.TopicCollection(["ops"])

    def topic_operations() -> set | None:
        try:
            described = alice.describe_topics(topics, include_authorized_operations=True)["ops"].result(10)
        except confluent_kafka.KafkaException:
            return None  # her ACLs not applied on the broker yet
        return set(described.authorized_operations or ())

    wanted = {Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}
    assert eventually(lambda: (found := topic_operations()) == wanted and found, 30, "alice's operations on ops")
    everything = {Op.READ, Op.WRITE, Op.CREATE, Op.DESCRIBE, Op.DELETE, Op.ALTER, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS}
    described = root.describe_topics(topics, include_authorized_operations=True)["ops"].result(10)
    assert set(described.authorized_operations) == everything  # a super user
    cluster_ops = set(root.describe_cluster(include_authorized_operations=True).result(10).authorized_operations)
    assert cluster_ops == {Op.CREATE, Op.CLUSTER_ACTION, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, Op.IDEMPOTENT_WRITE,
                           Op.ALTER, Op.DESCRIBE}  # fmt: skip
    # alice may not DESCRIBE the cluster: Kafka answers 0, no operation.
    assert not alice.describe_cluster(include_authorized_operations=True).result(10).authorized_operations

    def group_operations() -> set | None:
        future = alice.describe_consumer_groups(["ops-group"], include_authorized_operations=True)["ops-group"]
        try:
            return set(future.result(10).authorized_operations or ())
        except confluent_kafka.KafkaException as error:
            assert error.args[0].retriable() or error.args[0].code() in (
                confluent_kafka.KafkaError._WAIT_COORD, confluent_kafka.KafkaError.COORDINATOR_NOT_AVAILABLE
            ), error  # fmt: skip
            return None  # the group coordinator is still loading

    assert eventually(group_operations, 60, "alice's operations on ops-group") == {Op.DELETE, Op.DESCRIBE}


def test_kafkajs_creates_describes_and_deletes_acls(cluster: Cluster) -> None:
    """kafkajs's admin ACL calls over SASL_SSL as the admin; kafkajs comes from ~/.cache/minikafka-kafkajs (see
    test_kafkajs.py; skipped without node or kafkajs)."""
    import os

    from test_kafkajs import SCRIPT, _kafkajs

    modules = _kafkajs()
    security = {"ca": str(ca_certificate_path(cluster.certs_dir)), "username": "admin", "password": "admin-secret"}
    env = {**os.environ, "NODE_PATH": str(modules), "KAFKAJS_SECURITY": json.dumps(security)}
    done = subprocess.run(
        ["node", str(SCRIPT), "acls", cluster.kafka_bootstrap_servers, "kafkajs-acls", "User:carol"],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert answers["created"] is True, answers  # kafkajs's createAcls resolves true once every ACL is created

    def operations(described: dict) -> list[int]:
        assert described.get("errorCode", 0) == 0, described
        return sorted(acl["operation"] for r in described["resources"] for acl in r["acls"])

    read, write = 3, 4
    assert operations(answers["literal"]) == [read, write]
    assert operations(answers["match"]) == [read, write]
    [deleted] = answers["deleted"]["filterResponses"]
    assert deleted["errorCode"] == 0 and [m["operation"] for m in deleted["matchingAcls"]] == [write]
    assert operations(answers["after"]) == [read]
    assert answers["invalid"]["type"] == "INVALID_REQUEST", answers["invalid"]  # an empty resource name
