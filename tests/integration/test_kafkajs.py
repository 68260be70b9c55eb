"""kafkajs (Node) against a 3+3 cluster through the Kafka listeners: its admin client creates a topic, its
idempotent producer writes to it, and every record is read back once (with confluent-kafka's assign(); kafkajs's
own consumer needs consumer groups, tested once the broker advertises them).

kafkajs is installed with npm into ~/.cache/minikafka-kafkajs (outside the repository) on first use; without node,
npm or the registry the tests skip and say which."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster_fixtures import running_cluster

from minikafka.broker.kafka_wire.api_versions import SUPPORTED
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration

KAFKAJS_VERSION = "2.2.4"
CACHE = Path(os.environ.get("MINIKAFKA_KAFKAJS_CACHE", Path.home() / ".cache" / "minikafka-kafkajs"))
SCRIPT = Path(__file__).with_name("kafkajs_client.js")
FIND_COORDINATOR, JOIN_GROUP = 10, 11
RECORDS = 400


def _kafkajs() -> Path:
    """node_modules holding kafkajs, installed on first use; skips with the reason when it cannot be."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the kafkajs tests (apt-get install nodejs npm)")
    modules = CACHE / "node_modules"
    if not (modules / "kafkajs" / "package.json").exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        install = subprocess.run(
            [
                "npm",
                "install",
                "--no-audit",
                "--no-fund",
                "--silent",
                "--prefix",
                str(CACHE),
                f"kafkajs@{KAFKAJS_VERSION}",
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )
        if install.returncode != 0:
            pytest.skip(f"npm could not install kafkajs@{KAFKAJS_VERSION}: {install.stderr.strip()[-300:]}")
    return modules


def _run(modules: Path, *args: str) -> dict:
    env = {**os.environ, "NODE_PATH": str(modules)}
    done = subprocess.run(
        ["node", str(SCRIPT), *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("kafkajs"), 3, 3) as started:
        yield started


def test_kafkajs_admin_and_idempotent_producer(cluster: Cluster) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
    modules = _kafkajs()
    produced = _run(modules, "produce", cluster.kafka_bootstrap_servers, "from-kafkajs", str(RECORDS))
    assert produced["acked"] == RECORDS
    for partition, offsets in produced["offsets"].items():
        assert offsets == sorted(offsets) and offsets[0] == 0, (partition, offsets)

    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": cluster.kafka_bootstrap_servers, "group.id": "check", "enable.auto.commit": False}
    )
    consumer.assign(
        [confluent_kafka.TopicPartition("from-kafkajs", p, confluent_kafka.OFFSET_BEGINNING) for p in (0, 1)]
    )
    values: list[str] = []
    try:
        for _ in range(200):
            for message in consumer.consume(RECORDS, 0.5):
                assert message.error() is None, message.error()
                values.append(message.value().decode())
            if len(values) >= RECORDS:
                break
    finally:
        consumer.close()
    assert sorted(values) == sorted(f"kafkajs-{i}" for i in range(RECORDS))


def test_kafkajs_consumer_reads_what_it_produced(cluster: Cluster) -> None:
    if FIND_COORDINATOR not in SUPPORTED or JOIN_GROUP not in SUPPORTED:
        pytest.skip("kafkajs's consumer needs consumer groups (FindCoordinator, JoinGroup), not advertised yet")
    modules = _kafkajs()
    _run(modules, "produce", cluster.kafka_bootstrap_servers, "kafkajs-round-trip", "100")
    consumed = _run(modules, "consume", cluster.kafka_bootstrap_servers, "kafkajs-round-trip", "100")
    assert sorted(consumed["values"]) == sorted(f"kafkajs-{i}" for i in range(100))
