"""The Last Replica Standing issue with real processes, and KIP-966 closing it.

RF 3, min ISR 2, simulated page cache (nothing is flushed before a clean stop), an acks=all producer running. The
followers stop cleanly one after the other, so the ISR shrinks to the leader alone and acks=all is refused with
NOT_ENOUGH_REPLICAS. The leader then loses power (`reboot --lose-unflushed`) and the others return. With
eligible.leader.replicas.version=0 (Kafka 3.x) the leader never left the ISR, leads again with the log it has left,
and the followers truncate to it: `analyze` names the lost acknowledged offsets. With the default (1) the follower
that stopped last is in the ELR, the uncleanly restarted leader is not, and nothing acknowledged is lost.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from background_producer import BackgroundProducer
from cluster_fixtures import eventually, running_cluster
from test_broker_replication import consume_all
from test_kip903_race import analyze_run_dir

from minikafka.client.admin import AdminClient
from minikafka.deploy.faults import Faults
from minikafka.deploy.scenario.clients import AckedWrite, write_histories
from minikafka.deploy.scenario.events import find_events, query

# Two cluster runs and a Spark analysis each; the timeout is for a shared machine, a quiet one needs far less.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

LEADER, LAST_FOLLOWER, FIRST_FOLLOWER = 1, 2, 3
TOPIC = "lrs"
SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "auto.leader.rebalance.enable": "false",
    "log.simulate.page.cache": "true",
    "log.flush.interval.ms": "3600000",  # nothing reaches the disk unless a broker stops cleanly
}


def controller_events(cluster, name: str) -> list[dict]:  # noqa: ANN001
    return [
        e
        for c in cluster.controllers
        for e in map(json.loads, c.events_path.read_text().splitlines())
        if e["event"] == name
    ]


def incarnations(cluster, broker_id: int) -> int:  # noqa: ANN001
    """How many incarnations of the broker registered (committed and replayed by some controller)."""
    registered = controller_events(cluster, "broker_registered")
    return len({e["incarnation_id"] for e in registered if e["broker_id"] == broker_id})


def latest_partition_state(cluster) -> dict:  # noqa: ANN001
    """The last committed partition state, from the controllers' replay events."""
    return max(controller_events(cluster, "partition_changed"), key=lambda e: e["offset"])


def run_scenario(tmp_path: Path, version: int) -> dict:
    settings = dict(SETTINGS, **{"eligible.leader.replicas.version": str(version)})
    with running_cluster(tmp_path / "run", **settings) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic(
            TOPIC, assignment=[[LEADER, LAST_FOLLOWER, FIRST_FOLLOWER]], configs={"min.insync.replicas": "2"}
        )
        partition = lambda: admin.describe_topics([TOPIC])[0].partitions[0]  # noqa: E731
        eventually(lambda: partition().isr == [1, 2, 3], 20, "full ISR")
        faults = Faults(cluster)
        with BackgroundProducer(cluster.bootstrap_servers, TOPIC, delivery_timeout_ms=3000) as producer:
            eventually(lambda: producer.acknowledged >= 200, 20, "acks=all writes with the full ISR")
            faults.stop(FIRST_FOLLOWER)
            eventually(lambda: partition().isr == [LEADER, LAST_FOLLOWER], 20, "ISR [1, 2]")
            acked_before = producer.acknowledged
            eventually(lambda: producer.acknowledged >= acked_before + 200, 20, "acks=all writes with ISR [1, 2]")
            faults.stop(LAST_FOLLOWER)
            eventually(lambda: partition().isr == [LEADER], 20, "the leader alone in the ISR")
            eventually(
                lambda: find_events(cluster.run_dir, query("produce_rejected_not_enough_replicas", f"broker-{LEADER}")),
                20,
                "acks=all refused with NOT_ENOUGH_REPLICAS",
            )
            during = partition()
        assert producer.crashed is None and "NOT_ENOUGH_REPLICAS" in producer.failed
        acked = producer.acked
        faults.reboot(LEADER, lose_unflushed=True)
        # The followers return once the leader's new incarnation has registered (its session ran out first).
        # (A replayed registration: the partition changes of its batch, at lower offsets, are replayed too.)
        eventually(lambda: incarnations(cluster, LEADER) == 2, 30, "the rebooted leader registered again")
        leaderless = latest_partition_state(cluster)
        faults.start(LAST_FOLLOWER)
        faults.start(FIRST_FOLLOWER)
        eventually(lambda: partition().leader >= 0 and len(partition().isr) == 3, 60, "a leader and a full ISR again")
        after = partition()
        ends: list[dict] = []
        read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked), TOPIC, ends))
        write_histories(cluster.run_dir, TOPIC, [(AckedWrite(*write), "all") for write in acked], read, ends)
        decisions = controller_events(cluster, "broker_shutdown_detected") + controller_events(
            cluster, "leader_elected"
        )
    lost = sorted(offset for offset, value, _ in acked if read.get(offset) != value)
    shutdowns = {(e["broker_id"], e["clean"]) for e in decisions if e["event"] == "broker_shutdown_detected"}
    elected = {(e["leader"], e["reason"]) for e in decisions if e["event"] == "leader_elected"}
    return {
        "during": during,
        "leaderless": {k: leaderless[k] for k in ("leader", "isr", "elr", "last_known_elr")},
        "after": after,
        "acked": len(acked),
        "lost": lost,
        "shutdowns": shutdowns,
        "elected": elected,
        "run_dir": cluster.run_dir,
    }


def summary(outcome: dict) -> str:
    lost = outcome["lost"]
    span = f"{lost[0]}..{lost[-1]}" if lost else "none"
    return json.dumps({**outcome, "lost": f"{len(lost)} ({span})"}, default=str)


def test_version_0_loses_acknowledged_writes_and_analyze_names_them(tmp_path: Path, spark) -> None:  # noqa: ANN001
    outcome = run_scenario(tmp_path, version=0)
    print(summary(outcome))
    assert outcome["during"].elr == [] and outcome["after"].leader == LEADER  # it never left the ISR
    assert outcome["lost"], "the leader came back with a shorter log: acknowledged writes must be gone"
    verdicts = analyze_run_dir(spark, outcome["run_dir"])
    assert verdicts["LeaderCandidateCompleteness"]["verdict"] == "fail"
    lost = verdicts["NoCommittedRecordLost"]
    assert lost["verdict"] == "fail" and lost["violations"] == len(outcome["lost"])
    named = {int(row["offset"]) for row in lost["offending_rows"]}
    assert named and named <= set(outcome["lost"])  # the report names lost acknowledged offsets


def test_version_1_elects_the_eligible_replica_and_loses_nothing(tmp_path: Path, spark) -> None:  # noqa: ANN001
    outcome = run_scenario(tmp_path, version=1)
    print(summary(outcome))
    assert outcome["during"].elr == [LAST_FOLLOWER]  # it left an ISR below min ISR
    # The rebooted leader left the ELR; the follower that stopped cleanly kept its place across its restart and
    # was elected from it when it was unfenced.
    assert outcome["leaderless"] == {"leader": -1, "isr": [], "elr": [LAST_FOLLOWER], "last_known_elr": [LEADER]}
    assert {(LEADER, False), (LAST_FOLLOWER, True), (FIRST_FOLLOWER, True)} <= outcome["shutdowns"]
    assert (LAST_FOLLOWER, "unfence") in outcome["elected"]
    assert outcome["after"].leader == LAST_FOLLOWER
    assert outcome["lost"] == []
    verdicts = analyze_run_dir(spark, outcome["run_dir"])
    failed = {name: v["offending_rows"] for name, v in verdicts.items() if v["verdict"] == "fail"}
    assert failed == {}
    assert verdicts["NoCommittedRecordLost"]["checked"] == outcome["acked"]
