"""Unclean leader election: RF 2, min ISR 1; the ISR shrinks to {1} while 2 is down; then 1 is killed and its disk
wiped, and 2 restarts. With unclean election off the partition stays leaderless (1 is in its ELR);
`minikafka leader-election --election-type unclean` elects 2, RECOVERING, and the writes only 1 had are gone."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster
from test_broker_reboot import produce
from test_broker_replication import consume_all

from minikafka.client.admin import AdminClient
from minikafka.deploy.faults import Faults

pytestmark = pytest.mark.integration

SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}


def test_unclean_election_elects_the_out_of_sync_replica_only_when_asked(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", brokers=2, **SETTINGS) as cluster:
        where = ["--bootstrap-controller", ",".join(cluster.bootstrap_controllers)]
        admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5)
        admin.create_topic("orders", assignment=[[1, 2]], configs={"min.insync.replicas": "1"})
        eventually(lambda: len(admin.describe_topics(["orders"])[0].partitions[0].isr) == 2, 20, "full ISR")
        both = asyncio.run(produce(cluster.bootstrap_servers, "orders", 100, "both"))
        Faults(cluster).kill(2)
        eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].isr == [1], 20, "ISR shrunk to {1}")
        only_1 = asyncio.run(produce(cluster.bootstrap_servers, "orders", 100, "only-1"))
        Faults(cluster).kill(1)
        shutil.rmtree(cluster.node(1).data_dir)
        Faults(cluster).start(2)
        eventually(
            lambda: {b.broker_id: b.fenced for b in admin.describe_cluster().brokers} == {1: True, 2: False},
            30,
            "1 fenced, 2 unfenced",
        )
        # Out of sync, with unclean election off: 2 does not lead on its own (1, the last ISR member, is in the ELR).
        eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].leader == -1, 10, "no leader")
        leaderless = admin.describe_topics(["orders"])[0].partitions[0]
        assert (leaderless.isr, leaderless.elr, leaderless.last_known_elr) == ([], [1], [1])
        assert not any(
            json.loads(line)["event"] == "leader_elected" and json.loads(line)["leader"] == 2
            for c in cluster.controllers
            for line in c.events_path.read_text().splitlines()
        )

        elected = minikafka(
            "leader-election", "--election-type", "unclean", "--topic", "orders", "--partition", "0", *where
        )
        assert elected.returncode == 0, elected.stderr
        assert elected.stdout.strip() == "Successfully completed leader election (UNCLEAN) for partitions orders-0"
        eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].leader == 2, 20, "2 leading")
        assert admin.describe_topics(["orders"])[0].partitions[0].isr == [2]

        controller_events = [
            json.loads(line) for c in cluster.controllers for line in c.events_path.read_text().splitlines()
        ]
        elections = [e for e in controller_events if e["event"] == "leader_elected" and e["unclean"]]
        assert [(e["leader"], e["election_type"]) for e in elections] == [(2, "UNCLEAN")]
        changed = [
            e for e in controller_events if e["event"] == "partition_changed" and e["reason"] == "unclean_election"
        ]
        assert changed and all(e["leader_recovery_state"] == "RECOVERING" for e in changed)

        read = asyncio.run(consume_all(cluster.bootstrap_servers, len(both) + len(only_1)))
        assert all(read.get(offset) == value for offset, value in both)  # what 2 had is kept
        lost = [(offset, value) for offset, value in only_1 if read.get(offset) != value]
        assert lost == only_1  # what only 1 had is what the unclean election cost
