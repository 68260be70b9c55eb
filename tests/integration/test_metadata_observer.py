"""A broker-side observer follows the real controller quorum's metadata log, persists it, and resumes after a
restart from its own offset; a controller that fell behind a snapshot catches up through FetchSnapshot."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from background_producer import BackgroundProducer
from cluster_fixtures import eventually, issue_node_tls, running_cluster
from test_controller_quorum import register_broker

from minikafka.client.admin import AdminClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.tls import TlsFiles
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster
from minikafka.kraft_controller.metadata.records import Topic, decode_record
from minikafka.kraft_controller.raft.core import RaftConfig
from minikafka.kraft_controller.raft.driver import RaftDriver
from minikafka.kraft_controller.raft.messages import LogEntry

pytestmark = pytest.mark.integration


class Recorder:
    def __init__(self) -> None:
        self.entries: list[LogEntry] = []
        self.high_watermark = 0
        self.snapshots: list[int] = []

    def handle_commit(self, entries: Sequence[LogEntry]) -> None:
        self.entries.extend(entries)

    def handle_high_watermark(self, high_watermark: int) -> None:
        self.high_watermark = high_watermark

    def handle_leader_change(self, epoch: int, leader_id: int | None, epoch_start_offset: int) -> None:
        pass

    def handle_snapshot(self, data: bytes, end_offset: int) -> None:
        self.snapshots.append(end_offset)


async def follow(
    voters: dict[int, str], data_dir: Path, until: int, tls: TlsFiles | None = None
) -> tuple[Recorder, RaftDriver]:
    recorder = Recorder()
    driver = RaftDriver(7, voters, data_dir, RaftConfig(), "minikafka", tls=tls)
    driver.add_listener(recorder)
    driver.start()
    deadline = asyncio.get_running_loop().time() + 20
    while recorder.high_watermark < until and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    await driver.stop(resign=False)
    return recorder, driver


def test_observer_follows_persists_and_resumes(tmp_path: Path) -> None:
    with running_cluster(
        tmp_path / "run", controllers=3, brokers=0, **{"broker.session.timeout.ms": "60000"}
    ) as cluster:
        admin = AdminClient(cluster.bootstrap_controllers, [], timeout_s=2, tls=issue_node_tls(cluster, "broker-1"))
        register_broker(admin, 1)
        admin.create_topic("first", partitions=1, replication_factor=1)
        voters = {c.node_id: c.address for c in cluster.controllers}
        observer_tls = issue_node_tls(cluster, "broker-7")  # the observer fetches the metadata log as node 7
        target = admin.describe_quorum()["high_watermark"]

        recorder, driver = asyncio.run(follow(voters, tmp_path / "observer", target, observer_tls))
        assert recorder.high_watermark >= target
        topics = [decode_record(e.data) for e in recorder.entries]
        assert any(isinstance(r, Topic) and r.name == "first" for r in topics)
        first_run_end = driver.core.log_end_offset
        assert first_run_end >= target

        admin.create_topic("second", partitions=1, replication_factor=1)
        target = admin.describe_quorum()["high_watermark"]
        again, driver = asyncio.run(follow(voters, tmp_path / "observer", target, observer_tls))
        # Resumed from its own copy: the log held the old entries before fetching new ones.
        assert driver.core.log_end_offset >= target
        names = [r.name for r in (decode_record(e.data) for e in again.entries) if isinstance(r, Topic)]
        assert names == ["first", "second"]


def test_lagging_controller_catches_up_from_a_snapshot(tmp_path: Path) -> None:
    with running_cluster(
        tmp_path / "run",
        controllers=3,
        brokers=0,
        **{
            "broker.session.timeout.ms": "60000",
            "metadata.log.max.record.bytes.between.snapshots": "200",
        },
    ) as cluster:
        admin = AdminClient(cluster.bootstrap_controllers, [], timeout_s=2, tls=issue_node_tls(cluster, "broker-1"))
        register_broker(admin, 1)
        leader = admin.describe_quorum()["leader_id"]
        lagging = next(c.node_id for c in cluster.controllers if c.node_id != leader)
        Faults(cluster).kill(lagging)
        for index in range(8):
            admin.create_topic(f"t{index}", partitions=2, replication_factor=1)
        Faults(cluster).start(lagging)

        def caught_up() -> bool:
            quorum = admin.describe_quorum()
            voter = next(v for v in quorum["voters"] if v["id"] == lagging)
            return voter["log_end_offset"] >= quorum["high_watermark"]

        eventually(caught_up, 30, f"controller {lagging} catching up")
        log = (cluster.run_dir / "logs" / f"controller-{lagging}.jsonl").read_text()
        assert '"event":"metadata_snapshot_loaded"' in log


# CI kills the active controller a few times; MINIKAFKA_CONTROLLER_KILLS=50 runs the full soak.
CONTROLLER_KILLS = int(os.environ.get("MINIKAFKA_CONTROLLER_KILLS", "5"))
RECOVERY_TIMEOUT_S = 30  # a stuck observer never recovers; a healthy failover takes a few seconds


def create_topic_once(admin: AdminClient, name: str) -> bool:
    """Create `name` through whichever controller leads; an earlier attempt may have created it already."""
    try:
        admin.create_topic(name, partitions=1, replication_factor=1)
    except KafkaError as error:
        if error.code != ErrorCode.TOPIC_ALREADY_EXISTS:
            raise
    return True


def every_broker_knows(brokers: dict[int, AdminClient], topic: str) -> bool:
    return all(admin.describe_topics([topic])[0].name == topic for admin in brokers.values())


def observers_caught_up(admin: AdminClient, broker_ids: set[int]) -> bool:
    quorum = admin.describe_quorum()
    caught_up = {o["id"] for o in quorum["observers"] if o["log_end_offset"] >= quorum["high_watermark"]}
    return broker_ids <= caught_up


def voter_caught_up(admin: AdminClient, node_id: int) -> bool:
    quorum = admin.describe_quorum()
    voter = next(v for v in quorum["voters"] if v["id"] == node_id)
    return voter["log_end_offset"] >= quorum["high_watermark"]


def kill_the_active_controller(
    cluster: Cluster, admin: AdminClient, brokers: dict[int, AdminClient], kill: int
) -> float:
    """SIGKILL the quorum leader; the seconds until every broker follows the new one (a topic created after the kill
    known to each, each listed as a caught-up observer). Then restart the victim and wait for it to catch up."""
    quorum = eventually(lambda: (q := admin.describe_quorum())["leader_id"] >= 0 and q, 20, "a quorum leader")
    leader = quorum["leader_id"]
    Faults(cluster).kill(leader)
    killed_at = time.monotonic()
    topic = f"after-kill-{kill}"
    eventually(lambda: create_topic_once(admin, topic), RECOVERY_TIMEOUT_S, f"creating {topic}")
    eventually(lambda: every_broker_knows(brokers, topic), RECOVERY_TIMEOUT_S, f"every broker knowing {topic}")
    eventually(lambda: observers_caught_up(admin, set(brokers)), RECOVERY_TIMEOUT_S, "brokers as caught-up observers")
    recovery_s = time.monotonic() - killed_at
    Faults(cluster).start(leader)
    eventually(lambda: voter_caught_up(admin, leader), RECOVERY_TIMEOUT_S, f"controller {leader} caught up")
    return recovery_s


def test_brokers_follow_each_new_quorum_leader_after_controller_kills(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", controllers=3, brokers=3) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=2, tls=cluster.admin_tls
        )
        brokers = {b.node_id: AdminClient([], [b.address], timeout_s=2) for b in cluster.brokers}
        admin.create_topic("load", partitions=1, replication_factor=3)
        eventually(lambda: admin.describe_topics(["load"])[0].partitions[0].leader >= 0, 20, "a leader for load")
        recoveries_s = []
        with BackgroundProducer(cluster.bootstrap_servers, "load") as producer:
            for kill in range(CONTROLLER_KILLS):
                acknowledged = producer.acknowledged
                recoveries_s.append(kill_the_active_controller(cluster, admin, brokers, kill))
                eventually(
                    lambda a=acknowledged: producer.acknowledged > a, RECOVERY_TIMEOUT_S, "acks=all acknowledged"
                )
        assert producer.crashed is None, repr(producer.crashed)
        recoveries_s.sort()
        print(
            json.dumps(
                {
                    "kills": len(recoveries_s),
                    "recovery_s_min": round(recoveries_s[0], 2),
                    "recovery_s_median": round(statistics.median(recoveries_s), 2),
                    "recovery_s_max": round(recoveries_s[-1], 2),
                    "acknowledged": producer.acknowledged,
                    "failed": len(producer.failed),
                }
            )
        )
