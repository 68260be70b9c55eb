"""The stand-ins for Kafka's tools that librdkafka's tests run (benchmarks/librdkafka_suite.py's KAFKA_PATH):
kafka-topics.sh's create, alter and delete become AdminClient calls with the same arguments, and kafka-acls.sh runs
`minikafka acls` on the run's controllers without the broker address it was given."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # the benchmarks are scripts, not a package

pytest.importorskip("confluent_kafka", reason="confluent-kafka is in the dev extra")
import kafka_topics_shim  # noqa: E402 - found on the path added above
from librdkafka_suite import kafka_tools  # noqa: E402


class _Done:
    def result(self, timeout: float) -> None:
        return None


class _Admin:
    calls: list[tuple[str, Any]] = []

    def __init__(self, config: dict[str, str]) -> None:
        self.calls.append(("bootstrap", config["bootstrap.servers"]))

    def create_topics(self, topics: list[Any], operation_timeout: float) -> dict[str, _Done]:
        [topic] = topics
        self.calls.append(("create", (topic.topic, topic.num_partitions, topic.replication_factor, topic.config)))
        return {topic.topic: _Done()}

    def create_partitions(self, partitions: list[Any], operation_timeout: float) -> dict[str, _Done]:
        [grown] = partitions
        self.calls.append(("alter", (grown.topic, grown.new_total_count)))
        return {grown.topic: _Done()}

    def delete_topics(self, topics: list[str], operation_timeout: float) -> dict[str, _Done]:
        self.calls.append(("delete", topics[0]))
        return {topics[0]: _Done()}


def test_kafka_topics_arguments_become_admin_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kafka_topics_shim, "AdminClient", _Admin)
    _Admin.calls = []
    common = ["--bootstrap-server", "h:9092", "--topic", "t"]
    create = ["--create", "--partitions", "2", "--replication-factor", "1", "--config", "message.timestamp.type=x=y"]
    assert kafka_topics_shim.main([*common, *create]) == 0
    assert kafka_topics_shim.main([*common, "--alter", "--partitions", "4"]) == 0
    assert kafka_topics_shim.main([*common, "--delete"]) == 0
    assert [call for call in _Admin.calls if call[0] != "bootstrap"] == [
        ("create", ("t", 2, 1, {"message.timestamp.type": "x=y"})),
        ("alter", ("t", 4)),
        ("delete", "t"),
    ]


def test_kafka_acls_runs_minikafka_acls_without_the_broker_address(tmp_path: Path) -> None:
    tools = kafka_tools(tmp_path)
    topics, acls = tools / "bin" / "kafka-topics.sh", tools / "bin" / "kafka-acls.sh"
    assert topics.stat().st_mode & 0o111 and acls.stat().st_mode & 0o111
    # The run's controllers are asked (here: no cluster in the directory), not the broker address given
    done = subprocess.run(
        [str(acls), "--bootstrap-server", "h:1", "--list"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and f"no cluster in {tmp_path}" in done.stderr
