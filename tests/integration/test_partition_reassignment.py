"""Moving a partition off a dead broker (KIP-455): 4 brokers, orders-0 on 1, 2, 3 under acks=all load; 3 is
killed; `minikafka reassign-partitions`, given only brokers as Kafka's tool is, moves the partition to 1, 2, 4. It
completes once 4 is in the ISR (leader epoch bumped), broker 3 deletes its stray log when it returns, no
acknowledged record is lost, and broker 4's log matches the leader's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster
from test_broker_replication import consume_all
from test_preferred_leader_election import acked_load

from minikafka.client.admin import AdminClient
from minikafka.deploy.faults import Faults
from minikafka.storage.dump_log import dump_log

pytestmark = pytest.mark.integration

SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}


def batches_below(data_dir: Path, end: int) -> list[tuple[int, int, int]]:
    """(base offset, last offset, crc) of every batch of orders-0 ending below `end`, as dump-log reads them."""
    found = []
    for segment in sorted((data_dir / "orders-0").glob("*.log")):
        for batch in dump_log(segment)["batches"]:
            if batch["last_offset"] < end:
                found.append((batch["base_offset"], batch["last_offset"], batch["crc"]))
    return found


def test_partition_moved_off_a_dead_broker(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", brokers=4, **SETTINGS) as cluster:
        # As Kafka's tools: only brokers, which forward the requests to the active controller.
        where = ["--bootstrap-server", ",".join(cluster.bootstrap_servers)]
        only_controllers = [
            "--bootstrap-controller",
            ",".join(cluster.bootstrap_controllers),
            "--command-config",  # the controllers' listener is mutual TLS
            str(cluster.admin_client_properties),
        ]
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic("orders", assignment=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
        eventually(lambda: len(admin.describe_topics(["orders"])[0].partitions[0].isr) == 3, 20, "full ISR")
        plan = tmp_path / "plan.json"
        plan.write_text(
            json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2, 4]}]})
        )
        with acked_load(cluster.bootstrap_servers) as acked:
            eventually(lambda: len(acked) > 100, 20, "acknowledged writes")
            Faults(cluster).kill(3)
            eventually(lambda: 3 not in admin.describe_topics(["orders"])[0].partitions[0].isr, 20, "3 out of the ISR")
            before = admin.describe_topics(["orders"])[0].partitions[0]

            started = minikafka("reassign-partitions", "--reassignment-json-file", str(plan), "--execute", *where)
            assert started.returncode == 0, started.stderr
            assert "Successfully started partition reassignment(s) for orders-0" in started.stdout

            def verified(connection: list[str]) -> bool:
                out = minikafka(
                    "reassign-partitions", "--reassignment-json-file", str(plan), "--verify", "--json", *connection
                )
                assert out.returncode == 0, out.stderr
                return json.loads(out.stdout)["partitions"][0]["status"] == "complete"

            eventually(lambda: verified(where), 60, "--verify reporting the reassignment complete")
            # With only controllers, --verify finds the brokers through them.
            assert verified(only_controllers)
            after = admin.describe_topics(["orders"])[0].partitions[0]
            assert after.replicas == [1, 2, 4] and set(after.isr) == {1, 2, 4}
            assert after.leader_epoch > before.leader_epoch
            acked_before = len(acked)
            eventually(lambda: len(acked) > acked_before + 100, 20, "writes acknowledged after the move")
        listed = minikafka("reassign-partitions", "--list", "--json", *where)
        assert json.loads(listed.stdout) == {"reassignments": []}
        elected = minikafka(
            "leader-election", "--election-type", "preferred", "--topic", "orders", "--partition", "0", "--json", *where
        )
        assert elected.returncode == 0, elected.stderr
        assert json.loads(elected.stdout)["elected"] + json.loads(elected.stdout)["not_needed"] == ["orders-0"]

        Faults(cluster).start(3)
        log3 = cluster.node(3).events_path

        def stray_deleted() -> bool:
            events = [json.loads(line) for line in log3.read_text().splitlines()]
            return any(e["event"] == "stray_partition_deleted" and e["partition"] == "orders-0" for e in events)

        eventually(stray_deleted, 30, "broker 3 deleting its stray orders-0")
        assert not (cluster.node(3).data_dir / "orders-0").exists()

        read = asyncio.run(consume_all(cluster.bootstrap_servers, max(acked) + 1))
        assert [offset for offset, value in acked.items() if read.get(offset) != value] == []
        leader = admin.describe_topics(["orders"])[0].partitions[0].leader
        end = max(acked) + 1
        eventually(
            lambda: batches_below(cluster.node(4).data_dir, end) == batches_below(cluster.node(leader).data_dir, end),
            20,
            "broker 4's log matching the leader's below the high watermark",
        )
        assert batches_below(cluster.node(4).data_dir, end)[-1][1] == end - 1

        controller_events = [
            json.loads(line)["event"] for c in cluster.controllers for line in c.events_path.read_text().splitlines()
        ]
        assert "reassignment_started" in controller_events and "reassignment_completed" in controller_events

        bad = minikafka(
            "reassign-partitions", "--reassignment-json-file", str(_plan(tmp_path, [1, 2, 9])), "--execute", *where
        )
        assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "INVALID_REPLICA_ASSIGNMENT" in bad.stderr
        dup = minikafka(
            "reassign-partitions", "--reassignment-json-file", str(_plan(tmp_path, [1, 2, 2])), "--execute", *where
        )
        assert dup.returncode == 1 and dup.stderr.count("\n") == 1 and "INVALID_REPLICA_ASSIGNMENT" in dup.stderr
        unknown = _plan(tmp_path, [1, 2, 4], topic="nope")
        missing = minikafka("reassign-partitions", "--reassignment-json-file", str(unknown), "--execute", *where)
        assert missing.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.stderr
        assert "Traceback" not in bad.stderr + dup.stderr + missing.stderr
        _throttled_move(cluster, admin, tmp_path, where, only_controllers)


def _throttled_move(cluster: Any, admin: AdminClient, tmp_path: Path, where: list[str], controllers: list[str]) -> None:
    """--throttle as Kafka's tool sets it: the rates on the brokers involved, the moving replicas listed on the
    topic (the current ones on the leader side, the added one on the follower side); the brokers take them on;
    --verify takes every throttle off once the move completed. (The rate itself is simulated:
    tests/sim/world/test_throttled_reassignment.py.)"""
    admin.create_topic("moving", assignment=[[1, 2]])
    eventually(lambda: len(admin.describe_topics(["moving"])[0].partitions[0].isr) == 2, 20, "moving's full ISR")
    plan = _plan(tmp_path, [1, 2, 4], topic="moving")
    out = minikafka(
        "reassign-partitions", "--reassignment-json-file", str(plan), "--execute", "--throttle", "10000000", *where
    )
    assert out.returncode == 0, out.stderr
    assert "The inter-broker throttle limit was set to 10000000 B/s" in out.stdout

    def dynamic(entity: str, name: str) -> dict[str, str]:
        described = minikafka(
            "configs", "--describe", "--entity-type", entity, "--entity-name", name, "--json", *controllers
        )
        assert described.returncode == 0, described.stderr
        return dict(json.loads(described.stdout)["configs"])

    assert dynamic("topics", "moving") == {
        "leader.replication.throttled.replicas": "0:1,0:2",
        "follower.replication.throttled.replicas": "0:4",
    }
    rates = {"leader.replication.throttled.rate": "10000000", "follower.replication.throttled.rate": "10000000"}
    assert all(dynamic("brokers", str(b)) == rates for b in (1, 2, 4))

    def took_on(node: int, side: str, topics: dict[str, Any]) -> bool:
        events = [json.loads(line) for line in cluster.node(node).events_path.read_text().splitlines()]
        return any(
            e["event"] == "replication_throttle_changed" and (e["side"], e["topics"]) == (side, topics) for e in events
        )

    eventually(lambda: took_on(4, "follower", {"moving": [0]}), 20, "broker 4 throttling its new replica")

    def verified() -> list[str]:
        out = minikafka("reassign-partitions", "--reassignment-json-file", str(plan), "--verify", *where)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines() if "is completed" in out.stdout else []

    lines = eventually(verified, 60, "the throttled move completed")
    assert "Clearing broker-level throttles on brokers 1,2,3,4" in lines
    assert "Clearing topic-level throttles on topics moving" in lines
    assert dynamic("topics", "moving") == {} and dynamic("brokers", "4") == {}
    eventually(lambda: took_on(4, "follower", {}), 20, "broker 4 throttling nothing")


def _plan(tmp_path: Path, replicas: list[int], topic: str = "orders") -> Path:
    path = tmp_path / f"plan-{topic}-{'-'.join(map(str, replicas))}.json"
    path.write_text(json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "replicas": replicas}]}))
    return path
