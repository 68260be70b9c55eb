"""Kafka clients on a SASL_SSL Kafka listener of a real broker: TLS with the test CA, SASL/PLAIN users from
sasl.plain.users and SCRAM credentials set through AlterUserScramCredentials; a wrong password is refused with
SASL_AUTHENTICATION_FAILED and nothing else is served before authentication. The same broker's gRPC client listener
is GRPC_SASL_SSL: minikafka's own tools authenticate there with the same credentials."""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from cluster_fixtures import eventually, minikafka, recv_frame, running_cluster
from tls_fixtures import CertificateFiles, make_certificates, make_client_certificate

from minikafka.common.certificates import ca_certificate_path
from minikafka.common.grpc_support import sync_channel
from minikafka.common.tls import TlsFiles
from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster
from minikafka.pb import broker_pb2, broker_pb2_grpc

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="the test CA is made with openssl"),
]
confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
admin_module = pytest.importorskip("confluent_kafka.admin")

TOPIC = "secured"
SCRAM_FAILED = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> CertificateFiles:
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """No ssl.keystore.location: both listeners show the broker's certificate from the run's CA (RUN/certs)."""
    overrides = {
        "listener.security.protocol.map": "PLAINTEXT:SASL_SSL,GRPC:GRPC_SASL_SSL,BROKER:GRPC,CONTROLLER:GRPC",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.plain.users": "carol:carol-secret",
        # kcat 1.7's librdkafka (2.0) repeats its SCRAM nonce; Kafka 4's exact match (the default) refuses it.
        "sasl.scram.final.nonce.match": "suffix",
    }
    with running_cluster(tmp_path_factory.mktemp("sasl-ssl"), 1, 1, **overrides) as started:
        with cluster_commands.admin_for(started, timeout_s=10) as admin:
            admin.create_topic(TOPIC, partitions=1, replication_factor=1)
        yield started


@pytest.fixture(scope="module")
def ca(cluster: Cluster) -> Path:
    """What clients trust: the run's CA, which `cluster up` made (ssl.ca.location)."""
    return ca_certificate_path(cluster.certs_dir)


def _client_config(cluster: Cluster, ca: Path, mechanism: str, user: str, password: str) -> dict:
    return {
        "bootstrap.servers": cluster.kafka_bootstrap_servers,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
        "ssl.ca.location": str(ca),
    }


def _produce_and_consume(config: dict, prefix: str, count: int = 20) -> None:
    producer = confluent_kafka.Producer({**config, "acks": "all"})
    errors: list[object] = []
    for i in range(count):
        producer.produce(
            TOPIC, value=f"{prefix}-{i}".encode(), on_delivery=lambda e, _m: errors.append(e) if e else None
        )
    assert producer.flush(30) == 0
    assert errors == []
    consumer = confluent_kafka.Consumer({**config, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, confluent_kafka.OFFSET_BEGINNING)])
    values: list[bytes] = []
    try:

        def read_some() -> bool:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is None, message.error()
                values.append(message.value())
            return len([v for v in values if v.startswith(prefix.encode())]) >= count

        eventually(read_some, 30, f"{count} records consumed", interval_s=0)
    finally:
        consumer.close()
    assert [v for v in values if v.startswith(prefix.encode())] == [f"{prefix}-{i}".encode() for i in range(count)]


def _authentication_error(config: dict) -> str:
    """The error librdkafka reports when its connection is refused (it then keeps retrying)."""
    seen: list[object] = []
    producer = confluent_kafka.Producer({**config, "error_cb": seen.append})
    eventually(lambda: producer.poll(0.2) is not None and seen, 20, "an error callback")
    return str(seen[0])


def test_plain_produce_and_consume(cluster: Cluster, ca: Path) -> None:
    _produce_and_consume(_client_config(cluster, ca, "PLAIN", "carol", "carol-secret"), "plain")


def test_plain_wrong_password_is_sasl_authentication_failed(cluster: Cluster, ca: Path) -> None:
    error = _authentication_error(_client_config(cluster, ca, "PLAIN", "carol", "wrong"))
    assert "SASL authentication error" in error and "Invalid username or password" in error, error


@pytest.fixture(scope="module")
def alice(cluster: Cluster, ca: Path) -> str:
    """A SCRAM-SHA-512 user set with the CLI, once the broker's metadata image holds it (it authenticates from its
    own image)."""
    credential = "SCRAM-SHA-512=[iterations=8192,password=alice-secret]"
    altered = minikafka(
        "configs", "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config", credential,
        "--dir", str(cluster.run_dir), timeout_s=60,
    )  # fmt: skip
    assert altered.returncode == 0, altered.stderr
    assert altered.stdout.strip() == "Completed updating config for user alice."
    admin = admin_module.AdminClient(_client_config(cluster, ca, "PLAIN", "carol", "carol-secret"))
    eventually(lambda: "alice" in admin.describe_user_scram_credentials().result(), 20, "alice's credential")
    return "alice"


def test_scram_sha_512_set_with_the_cli(cluster: Cluster, ca: Path, alice: str) -> None:
    described = minikafka("configs", "--describe", "--entity-type", "users", "--dir", str(cluster.run_dir))
    assert "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=8192" in described.stdout
    _produce_and_consume(_client_config(cluster, ca, "SCRAM-SHA-512", alice, "alice-secret"), "scram512")
    error = _authentication_error(_client_config(cluster, ca, "SCRAM-SHA-512", alice, "wrong"))
    assert "SASL authentication error" in error and SCRAM_FAILED in error, error
    unknown = _authentication_error(_client_config(cluster, ca, "SCRAM-SHA-512", "nobody", "alice-secret"))
    assert SCRAM_FAILED in unknown, unknown


def _kcat(cluster: Cluster, ca: Path, password: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    security = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": password,
        "ssl.ca.location": str(ca),
    }
    options = [item for key, value in security.items() for item in ("-X", f"{key}={value}")]
    command = ["kcat", "-b", cluster.kafka_bootstrap_servers, *options, *args]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (Debian/Ubuntu: apt-get install kcat)")
def test_kcat_scram_sha_512(cluster: Cluster, ca: Path, alice: str) -> None:
    lines = [f"kcat-{i}" for i in range(20)]
    produced = _kcat(cluster, ca, "alice-secret", "-P", "-t", TOPIC, "-X", "acks=all", stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _kcat(cluster, ca, "alice-secret", "-C", "-t", TOPIC, "-o", "beginning", "-e", "-q")
    assert consumed.returncode == 0, consumed.stderr
    assert [line for line in consumed.stdout.splitlines() if line.startswith("kcat-")] == lines
    refused = _kcat(cluster, ca, "wrong", "-L", "-m", "5")
    assert refused.returncode != 0
    assert "SASL authentication error" in refused.stderr and SCRAM_FAILED in refused.stderr, refused.stderr


def test_kafka_python_scram_sha_512(cluster: Cluster, ca: Path, alice: str, caplog: pytest.LogCaptureFixture) -> None:
    kafka = pytest.importorskip("kafka", reason="kafka-python is in the dev extra")
    security = {
        "bootstrap_servers": cluster.kafka_bootstrap_servers.split(","),
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": alice,
        "ssl_cafile": str(ca),
    }
    producer = kafka.KafkaProducer(**security, sasl_plain_password="alice-secret", acks="all")
    try:
        offsets = [producer.send(TOPIC, f"kafka-python-{i}".encode()).get(timeout=30).offset for i in range(10)]
    finally:
        producer.close()
    assert offsets == sorted(offsets) and len(set(offsets)) == 10
    with pytest.raises(kafka.errors.KafkaError):  # kafka-python retries the bootstrap until max_block_ms
        kafka.KafkaProducer(**security, sasl_plain_password="wrong", bootstrap_timeout_ms=3000)
    logged = [record.getMessage() for record in caplog.records]
    assert any("SaslAuthenticationFailedError" in line and SCRAM_FAILED in line for line in logged), logged[-5:]


def test_scram_sha_256_through_the_kafka_admin_api(cluster: Cluster, ca: Path) -> None:
    """AlterUserScramCredentials and DescribeUserScramCredentials on the Kafka listener (forwarded to the
    controller; described from the broker's image), then a SCRAM-SHA-256 client."""
    admin = admin_module.AdminClient(_client_config(cluster, ca, "PLAIN", "carol", "carol-secret"))
    info = admin_module.ScramCredentialInfo(admin_module.ScramMechanism.SCRAM_SHA_256, 4096)
    upsert = admin_module.UserScramCredentialUpsertion("dave", info, b"dave-secret")
    admin.alter_user_scram_credentials([upsert])["dave"].result(timeout=20)
    described = eventually(lambda: admin.describe_user_scram_credentials(["dave"])["dave"].result(), 20, "dave")
    assert [(i.mechanism, i.iterations) for i in described.scram_credential_infos] == [
        (admin_module.ScramMechanism.SCRAM_SHA_256, 4096)
    ]
    _produce_and_consume(_client_config(cluster, ca, "SCRAM-SHA-256", "dave", "dave-secret"), "scram256")
    too_few = admin_module.UserScramCredentialUpsertion(
        "erin", admin_module.ScramCredentialInfo(admin_module.ScramMechanism.SCRAM_SHA_256, 100), b"erin-secret"
    )
    with pytest.raises(confluent_kafka.KafkaException, match="Too few iterations"):
        admin.alter_user_scram_credentials([too_few])["erin"].result(timeout=20)
    deletion = admin_module.UserScramCredentialDeletion("dave", admin_module.ScramMechanism.SCRAM_SHA_256)
    admin.alter_user_scram_credentials([deletion])["dave"].result(timeout=20)

    def dave_gone() -> bool:
        try:
            admin.describe_user_scram_credentials(["dave"])["dave"].result()
        except confluent_kafka.KafkaException as error:
            return error.args[0].code() == confluent_kafka.KafkaError.RESOURCE_NOT_FOUND
        return False

    eventually(dave_gone, 20, "dave's credential described as RESOURCE_NOT_FOUND")


def _tls_socket(cluster: Cluster, ca: Path) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(ca))
    host, _, port = cluster.brokers[0].kafka_address.rpartition(":")
    return context.wrap_socket(socket.create_connection((host, int(port)), timeout=10), server_hostname=host)


def test_a_request_before_authentication_closes_the_connection(cluster: Cluster, ca: Path) -> None:
    with _tls_socket(cluster, ca) as sock:
        metadata_v1 = struct.pack(">hhih", 3, 1, 7, -1) + struct.pack(">i", -1)  # Metadata v1, all topics
        sock.sendall(struct.pack(">i", len(metadata_v1)) + metadata_v1)
        assert sock.recv(4) == b""  # closed unanswered, as Kafka closes it
    with _tls_socket(cluster, ca) as sock:
        sock.sendall(struct.pack(">i", 524289))  # over sasl.server.max.receive.size: not read, closed
        assert sock.recv(4) == b""

    def closed_reasons() -> list[str]:
        lines = (cluster.run_dir / "logs" / "broker-1.jsonl").read_text().splitlines()
        events = [json.loads(line) for line in lines if '"kafka_connection_closed"' in line]
        return [event["reason"] for event in events]

    # The broker logs the close just after closing: wait for the line.
    eventually(lambda: "INVALID_REQUEST: frame size 524289 is larger than 524288" in closed_reasons(), 10, "the log")
    assert any(reason.startswith("INVALID_REQUEST: Unexpected Kafka request") for reason in closed_reasons())


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """A non-flexible request (header v1, client id "t")."""
    frame = struct.pack(">hhih", api_key, version, correlation_id, 1) + b"t" + body
    return struct.pack(">i", len(frame)) + frame


def test_handshake_v0_then_bare_plain_token(cluster: Cluster, ca: Path) -> None:
    """SaslHandshake v0: the SASL exchange goes on in bare size-prefixed tokens, then requests are served."""
    with _tls_socket(cluster, ca) as sock:
        sock.sendall(_request(17, 0, 1, struct.pack(">h", 5) + b"PLAIN"))
        handshake = recv_frame(sock)
        assert struct.unpack_from(">ih", handshake) == (1, 0)  # correlation id, error NONE
        token = b"\0carol\0carol-secret"
        sock.sendall(struct.pack(">i", len(token)) + token)
        assert recv_frame(sock) == b""  # PLAIN's empty server token
        sock.sendall(_request(3, 1, 2, struct.pack(">i", -1)))  # Metadata v1, all topics
        assert struct.unpack_from(">i", recv_frame(sock))[0] == 2


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed (Debian/Ubuntu: apt-get install kcat)")
def test_a_plaintext_client_gets_no_answer(cluster: Cluster) -> None:
    host, _, port = cluster.brokers[0].kafka_address.rpartition(":")
    result = subprocess.run(
        ["kcat", "-b", f"{host}:{port}", "-L", "-m", "3"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode != 0


async def test_aiokafka_scram_sha_512(cluster: Cluster, ca: Path, alice: str, caplog: pytest.LogCaptureFixture) -> None:
    aiokafka = pytest.importorskip("aiokafka", reason="aiokafka is in the dev extra")
    from aiokafka.helpers import create_ssl_context

    def producer(password: str):  # noqa: ANN202 - aiokafka.AIOKafkaProducer
        return aiokafka.AIOKafkaProducer(
            bootstrap_servers=cluster.kafka_bootstrap_servers,
            security_protocol="SASL_SSL",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username=alice,
            sasl_plain_password=password,
            ssl_context=create_ssl_context(cafile=str(ca)),
            acks="all",
        )

    good = producer("alice-secret")
    await good.start()
    try:
        sent = [await good.send_and_wait(TOPIC, f"aiokafka-{i}".encode()) for i in range(10)]
    finally:
        await good.stop()
    assert len({metadata.offset for metadata in sent}) == 10
    bad = producer("wrong")
    with pytest.raises(aiokafka.errors.KafkaConnectionError):  # aiokafka logs why it could not bootstrap
        await bad.start()
    await bad.stop()
    logged = [record.getMessage() for record in caplog.records]
    assert any("[Error 58] SaslAuthenticationFailed" in line and SCRAM_FAILED in line for line in logged), logged[-5:]


async def test_ssl_client_auth_required(certificates: CertificateFiles) -> None:
    """The listener's TLS context with ssl.client.auth=required: a client without a certificate the truststore's CA
    signed fails the handshake, one with it connects."""
    import asyncio

    from minikafka.broker.config import BrokerConfig
    from minikafka.broker.kafka_wire.listener_security import listener_security
    from minikafka.common.config import load_config

    properties = {
        "node.id": "1",
        "process.roles": "broker",
        "controller.quorum.voters": "101@127.0.0.1:9093",
        "log.dirs": "/tmp/unused",
        "listeners": "SECURE://127.0.0.1:0",
        "listener.security.protocol.map": "SECURE:SSL",
        "ssl.keystore.location": str(certificates.keystore),
        "ssl.truststore.location": str(certificates.ca),
        "ssl.client.auth": "required",
    }
    security = listener_security(load_config(BrokerConfig, properties), "SECURE")

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(await reader.readexactly(4))
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0, ssl=security.ssl_context)
    port = server.sockets[0].getsockname()[1]

    async def exchange(client: ssl.SSLContext) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client)
        writer.write(b"ping")
        try:
            return await reader.read(4)
        finally:
            writer.close()

    try:
        anonymous = ssl.create_default_context(cafile=str(certificates.ca))
        try:  # with TLS 1.3 the server's refusal comes after the client's handshake: an error or end of stream
            refused = await exchange(anonymous)
        except (ssl.SSLError, ConnectionError):
            refused = b""
        assert refused == b""
        known = ssl.create_default_context(cafile=str(certificates.ca))
        known.load_cert_chain(make_client_certificate(certificates.ca.parent, "alice"))
        assert await exchange(known) == b"ping"
    finally:
        server.close()


# ---- the gRPC client API on a GRPC_SASL_SSL listener (minikafka's own tools) ----


def _grpc_tool(cluster: Cluster, properties: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    where = ["--bootstrap-server", cluster.bootstrap_servers[0], "--command-config", str(properties)]
    command = [sys.executable, "-m", "minikafka.launcher", *args, *where]
    return subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=120, check=False)


def _grpc_client_properties(cluster: Cluster, path: Path, password: str) -> Path:
    """librdkafka's names, with the run's CA: the listener shows the broker's certificate from RUN/certs."""
    path.write_text(
        f"security.protocol=SASL_SSL\nssl.ca.location={ca_certificate_path(cluster.certs_dir)}\n"
        f"sasl.mechanism=SCRAM-SHA-512\nsasl.username=alice\nsasl.password={password}\n"
    )
    return path


def test_grpc_client_api_with_scram_sha_512(cluster: Cluster, alice: str, tmp_path: Path) -> None:
    good = _grpc_client_properties(cluster, tmp_path / "alice.properties", "alice-secret")
    lines = [f"grpc-{i}" for i in range(10)]
    produced = _grpc_tool(cluster, good, "produce", TOPIC, "--acks", "all", stdin="\n".join(lines) + "\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _grpc_tool(cluster, good, "consume", TOPIC, "--from-beginning", "--timeout-ms", "5000", "--json")
    assert consumed.returncode == 0, consumed.stderr
    values = [json.loads(line).get("value") for line in consumed.stdout.splitlines()]
    assert [v for v in values if v and v.startswith("grpc-")] == lines
    described = _grpc_tool(cluster, good, "topics", "describe", TOPIC, "--json")  # an admin tool's blocking channel
    assert described.returncode == 0 and json.loads(described.stdout)["topics"][0]["name"] == TOPIC, described.stderr

    wrong_password = _grpc_client_properties(cluster, tmp_path / "w.properties", "wrong")
    wrong = _grpc_tool(cluster, wrong_password, "produce", TOPIC, stdin="refused\n")
    assert wrong.returncode != 0
    expected = f"minikafka produce: error: SASL_AUTHENTICATION_FAILED (58): {SCRAM_FAILED}"
    assert wrong.stderr.splitlines() == [expected], wrong.stderr  # one line, no traceback


def test_grpc_client_api_refuses_a_call_without_a_session(cluster: Cluster) -> None:
    tls = TlsFiles(ca_certificate_path(cluster.certs_dir))
    with sync_channel(cluster.bootstrap_servers[0], tls) as channel, pytest.raises(grpc.RpcError) as refused:
        broker_pb2_grpc.BrokerStub(channel).Metadata(broker_pb2.MetadataRequest(), timeout=10)
    assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert refused.value.details().startswith("SASL_AUTHENTICATION_FAILED (58): no SASL session")

    def refusals() -> list[dict]:
        lines = (cluster.run_dir / "logs" / "broker-1.jsonl").read_text().splitlines()
        return [json.loads(line) for line in lines if '"grpc_sasl_call_refused"' in line]

    refused_events = eventually(refusals, 10, "the grpc_sasl_call_refused event")
    assert refused_events[0]["method"] == "/minikafka.Broker/Metadata"
    assert refused_events[0]["error"] == "SASL_AUTHENTICATION_FAILED"


def test_cluster_json_says_how_the_client_listeners_are_secured(cluster: Cluster) -> None:
    listeners = cluster.security_json()["listeners"]
    sasl = "server TLS, the run's CA; SASL PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert listeners["GRPC (brokers, minikafka clients)"] == f"SASL_SSL ({sasl})"
    assert listeners["PLAINTEXT (brokers, Kafka clients)"] == f"SASL_SSL ({sasl})"
