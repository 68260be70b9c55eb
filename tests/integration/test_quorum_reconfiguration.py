"""KIP-853 on real processes: a controller quorum formatted with three voters (`cluster up --dynamic-quorum
--initial-controllers 3`) grown to four and shrunk back to three, the active controller removed last, while a
producer writes acks=all; and the voter changes Kafka refuses."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from background_producer import BackgroundProducer
from cluster_fixtures import eventually

from minikafka.client.admin import AdminClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import is_alive, kill
from minikafka.deploy.scenario.clients import consume_partition
from minikafka.deploy.scenario.kraft import quorum_elections

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
CLUSTER_ID = "minikafka"
TOPIC = "under-reconfiguration"


def until_not_timed_out(change: Callable[[], None]) -> bool:
    """Whether a voter change went through; False while the leader answers REQUEST_TIMED_OUT (retry)."""
    try:
        change()
    except KafkaError as error:
        if error.code != ErrorCode.REQUEST_TIMED_OUT:
            raise
        return False
    return True


def events(run_dir: Path, name: str) -> list[dict]:
    found = []
    for path in sorted((run_dir / "logs").glob("controller-*.jsonl")):
        found += [json.loads(line) for line in path.read_text().splitlines() if f'"{name}"' in line]
    return found


def refused(call: object, code: ErrorCode) -> None:
    with pytest.raises(KafkaError) as error:
        call()  # type: ignore[operator]
    assert error.value.code == code, error.value


def test_grow_to_four_and_shrink_back_to_three_under_produce_load(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cluster = cluster_commands.up(run, 4, 3, {}, timeout_s=60, dynamic_quorum=True, initial_controllers=3)
    try:
        controllers, brokers = cluster.bootstrap_controllers, cluster.bootstrap_servers
        admin = AdminClient(controllers, brokers, timeout_s=10, tls=cluster.admin_tls)
        quorum = admin.describe_quorum()
        assert sorted(v["id"] for v in quorum["voters"]) == [101, 102, 103]
        admin.create_topic(TOPIC, assignment=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
        eventually(lambda: len(admin.describe_topics([TOPIC])[0].partitions[0].isr) == 3, 30, "a full ISR")
        with BackgroundProducer(cluster.bootstrap_servers, TOPIC) as producer:
            eventually(lambda: producer.acknowledged >= 100, 60, "acknowledged writes before the changes")
            joining = eventually(
                lambda: next((o for o in admin.describe_quorum()["observers"] if o["id"] == 104), None),
                30,
                "controller 104 fetching as an observer",
            )
            # Seen as an observer is not yet caught up: the leader answers REQUEST_TIMED_OUT until it is, and an
            # operator runs kafka-metadata-quorum add-controller again.
            eventually(
                lambda: until_not_timed_out(lambda: admin.add_raft_voter(104, joining["directory_id"], CLUSTER_ID)),
                60,
                "controller 104 added as a voter",
            )
            voters = {v["id"]: v["directory_id"] for v in admin.describe_quorum()["voters"]}
            assert sorted(voters) == [101, 102, 103, 104]
            refused(lambda: admin.add_raft_voter(104, voters[104], CLUSTER_ID), ErrorCode.DUPLICATE_VOTER)
            refused(lambda: admin.remove_raft_voter(101, "not-its-directory", CLUSTER_ID), ErrorCode.VOTER_NOT_FOUND)
            leader = admin.describe_quorum()["leader_id"]
            admin.remove_raft_voter(leader, voters[leader], CLUSTER_ID)
            after = eventually(lambda: (q := admin.describe_quorum())["leader_id"] >= 0 and q, 30, "a new leader")
            assert sorted(v["id"] for v in after["voters"]) == sorted(set(voters) - {leader})
            assert after["leader_id"] != leader
            acked_before = producer.acknowledged
            eventually(lambda: producer.acknowledged >= acked_before + 100, 60, "acknowledged writes after them")
        assert producer.crashed is None
        read = asyncio.run(consume_partition(cluster.bootstrap_servers, TOPIC, None, None))
        lost = [(offset, value) for offset, value, _ in producer.acked if read.get(offset) != value]
        assert lost == [], f"{len(lost)} acknowledged writes lost, first {lost[:3]}"
        resigned = [e for e in events(run, "raft_resigned") if e.get("reason") == "removed from the voter set"]
        assert [e["node"] for e in resigned] == [f"controller-{leader}"]
        elections = quorum_elections(events(run, "raft_leader_elected"), events(run, "raft_resigned"))
        print(f"{producer.acknowledged} acknowledged, {len(producer.failed)} failed; {elections.text()}")
        admin.close()
    finally:
        cluster_commands.down(cluster, timeout_s=10)
        for pid in cluster.pids.values():
            if is_alive(pid):
                kill(pid)
