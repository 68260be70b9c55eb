"""Unclean leader election: RF 2, min ISR 1; the ISR shrinks to {1} while 2 is down; then 1 is killed and its disk
wiped, and 2 restarts. With unclean election off the partition stays leaderless (1 is in its ELR);
`minikafka leader-election --election-type unclean` elects 2, RECOVERING, and the writes only 1 had are gone; the
partition is RECOVERED once 1 returns and joins the ISR (2's first ISR change), not before.
`analyze` charges exactly those to the election (UncleanElectionLoss), not to the protocol."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from cluster_fixtures import eventually, minikafka, running_cluster
from test_broker_replication import consume_all

from minikafka.client.admin import AdminClient
from minikafka.client.producer import Producer, ProducerConfig
from minikafka.common.event_log import utc_timestamp
from minikafka.deploy.analysis.report import analyze
from minikafka.deploy.faults import Faults
from minikafka.deploy.scenario.clients import AckedWrite, write_histories

# A cluster run and one Spark analysis; the timeout is for a shared machine, a quiet one needs far less.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "2000",
    "auto.leader.rebalance.enable": "false",
}


async def produce(bootstrap: list[str], topic: str, count: int, prefix: str) -> list[tuple[int, str, str]]:
    """(offset, value, ts of the acknowledgement) of each acks=all write."""
    producer = Producer(bootstrap, ProducerConfig(acks=-1))
    futures = [
        (f"{prefix}-{i}", await producer.send(topic, f"{prefix}-{i}".encode(), partition=0)) for i in range(count)
    ]
    acked = [((await future).offset, value, utc_timestamp()) for value, future in futures]
    await producer.close()
    return acked


def test_unclean_election_elects_the_out_of_sync_replica_only_when_asked(tmp_path: Path, spark) -> None:  # noqa: ANN001
    with running_cluster(tmp_path / "run", brokers=2, **SETTINGS) as cluster:
        where = ["--bootstrap-controller", ",".join(cluster.bootstrap_controllers)]
        where += ["--command-config", str(cluster.admin_client_properties)]  # the controllers' listener is mutual TLS
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic("orders", assignment=[[1, 2]], configs={"min.insync.replicas": "1"})
        eventually(lambda: len(admin.describe_topics(["orders"])[0].partitions[0].isr) == 2, 20, "full ISR")
        both = asyncio.run(produce(cluster.bootstrap_servers, "orders", 100, "both"))
        Faults(cluster).kill(2)
        eventually(lambda: admin.describe_topics(["orders"])[0].partitions[0].isr == [1], 20, "ISR shrunk to {1}")
        only_1 = asyncio.run(
            produce(cluster.bootstrap_servers, "orders", 40, "only-1")
        )  # within the rows a report shows
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

        ends: list[dict] = []
        read = asyncio.run(consume_all(cluster.bootstrap_servers, len(both) + len(only_1), "orders", ends))
        write_histories(cluster.run_dir, "orders", [(AckedWrite(*w), "all") for w in both + only_1], read, ends)
        assert all(read.get(offset) == value for offset, value, _ in both)  # what 2 had is kept
        lost = [offset for offset, value, _ in only_1 if read.get(offset) != value]
        assert lost == [offset for offset, _, _ in only_1]  # what only 1 had is what the unclean election cost

        # The new leader sends no AlterPartition just to say RECOVERED: the controller learns it with the leader's
        # next ISR change, here 1 (its disk wiped) returning and catching up.
        Faults(cluster).start(1)
        isr = lambda: sorted(admin.describe_topics(["orders"])[0].partitions[0].isr)  # noqa: E731
        eventually(lambda: isr() == [1, 2], 30, "1 back in the ISR")
        changes = [
            json.loads(line)
            for c in cluster.controllers
            for line in c.events_path.read_text().splitlines()
            if json.loads(line)["event"] == "partition_changed" and json.loads(line)["topic"] == "orders"
        ]
        after = [e for e in changes if e["leader_epoch"] >= elections[0]["leader_epoch"]]
        recovered = [e for e in after if e["leader_recovery_state"] == "RECOVERED"]
        assert recovered and all(sorted(e["isr"]) == [1, 2] for e in recovered)
        assert all(e["leader_recovery_state"] == "RECOVERING" for e in after if e["isr"] == [2])

    out = cluster.run_dir / "report"
    out.mkdir()
    summary = analyze(spark, cluster.run_dir, out)
    verdicts = {v["name"]: v for v in summary["invariants"]}
    print(json.dumps({"acknowledged": len(both) + len(only_1), "lost": f"{len(lost)} ({lost[0]}..{lost[-1]})"}))
    print(json.dumps({"verdict": summary["verdict"], "final_read": summary["final_read"]}))
    print(json.dumps({name: (v["verdict"], v["violations"]) for name, v in verdicts.items()}))
    charged = verdicts["UncleanElectionLoss"]
    print(json.dumps(charged["offending_rows"][0]))
    assert charged["verdict"] == "warn" and charged["violations"] == len(lost)
    election = elections[0]
    new_leader_log_end = len(both)  # 2 had every write acknowledged with it in the ISR, nothing after
    assert sorted(int(row["offset"]) for row in charged["offending_rows"]) == lost
    assert {
        (row["new_leader"], row["leader_epoch"], row["reason"], row["new_leader_log_end"])
        for row in charged["offending_rows"]
    } == {(2, election["leader_epoch"], election["reason"], new_leader_log_end)}
    assert all(offset >= new_leader_log_end for offset in lost)
    assert verdicts["NoCommittedRecordLost"]["verdict"] == "pass"
    assert verdicts["NoCommittedRecordLost"]["checked"] == len(both) + len(only_1)
    failed = {name: v["offending_rows"] for name, v in verdicts.items() if v["verdict"] == "fail"}
    assert failed == {}
    # The losses are a warning, not a failure: the final read saw the whole log, so nothing is unknown either.
    assert summary["verdict"] == "pass"
    final_read = summary["final_read"]
    assert (final_read["lost"], final_read["lost_to_unclean_elections"], final_read["unknown"]) == (
        len(lost),
        len(lost),
        0,
    )
