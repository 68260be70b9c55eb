"""The KIP-903 race with real processes, in its six steps.

Leader A holds its AlterPartition that adds B; B is killed and its disk wiped; B registers again with a new
epoch; A's held request is released; then A is killed. With the broker-epoch check (the default) the controller
answers INELIGIBLE_REPLICA, B never leads with a short log, and nothing acknowledged is lost. With
`alter.partition.broker.epoch.check=false` the stale request is accepted, B becomes leader, and acknowledged
records are lost: the test proves the loss is detected.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from cluster_fixtures import eventually, running_cluster
from test_broker_replication import consume_all

from minikafka.client.admin import AdminClient
from minikafka.client.producer import Producer, ProducerConfig
from minikafka.common.event_log import utc_timestamp
from minikafka.common.grpc_support import sync_channel
from minikafka.deploy.analysis.report import analyze
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import send_signal
from minikafka.pb import fault_pb2, fault_pb2_grpc

pytestmark = pytest.mark.integration

A, B = 1, 2
RECORDS = 3000
SETTINGS = {
    "broker.session.timeout.ms": "2000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "1500",
    "replica.fetch.max.bytes": "1",  # one batch per fetch: a wiped follower needs seconds to catch up
}


async def produce_one_batch_per_record(bootstrap: list[str]) -> list[tuple[int, str, str]]:
    """(offset, value, ts of the acknowledgement) of each acks=all write."""
    producer = Producer(
        bootstrap, ProducerConfig(acks=-1, linger_ms=0, batch_size=1, max_in_flight_requests_per_connection=5)
    )
    futures = [
        (f"r-{i:05d}", await producer.send("kip903", f"r-{i:05d}".encode(), partition=0)) for i in range(RECORDS)
    ]
    acked = [(metadata.offset, value, utc_timestamp()) for value, metadata in [(v, await f) for v, f in futures]]
    await producer.close()
    return acked


def write_histories(
    run_dir: Path, acked: list[tuple[int, str, str]], read: dict[int, str], ends: list[dict], topic: str = "kip903"
) -> None:
    """The run's client histories in the documented format (docs/events.md), for `analyze`."""
    history = run_dir / "history"
    history.mkdir(exist_ok=True)
    produced = [
        {
            "ts": ts,
            "topic": topic,
            "partition": 0,
            "offset": offset,
            "value": value,
            "acks": "all",
            "error": None,
            "latency_ms": None,
        }
        for offset, value, ts in acked
    ]
    consumed = [
        {"topic": topic, "partition": 0, "offset": offset, "key": None, "value": value, "leader_epoch": None}
        for offset, value in sorted(read.items())
    ]
    (history / f"produce-{topic}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in produced))
    # The read_end lines say where the final read stopped, so analyze can tell lost records from unread ones.
    (history / "consume-final.jsonl").write_text("".join(json.dumps(line) + "\n" for line in consumed + ends))


def broker_state(cluster, broker_id: int) -> fault_pb2.DescribeStateResponse:  # noqa: ANN001
    stub = fault_pb2_grpc.FaultStub(sync_channel(cluster.node(broker_id).inter_node_address, cluster.admin_tls))
    return stub.DescribeState(fault_pb2.DescribeStateRequest(), timeout=5)


def events(cluster, node: str, name: str) -> list[dict]:  # noqa: ANN001
    path = cluster.run_dir / "logs" / f"{node}.jsonl"
    return [e for e in map(json.loads, path.read_text().splitlines()) if e["event"] == name]


def run_race(tmp_path: Path, epoch_check: bool) -> dict:
    settings = dict(SETTINGS, **{"alter.partition.broker.epoch.check": str(epoch_check).lower()})
    with running_cluster(tmp_path / "run", **settings) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic("kip903", assignment=[[A, B]], configs={"min.insync.replicas": "1"})
        partition = lambda: admin.describe_topics(["kip903"])[0].partitions[0]  # noqa: E731
        eventually(lambda: partition().isr == [A, B], 20, "ISR [A, B]")

        # B falls out of the ISR; A alone acknowledges acks=all writes (min.insync.replicas=1).
        send_signal(cluster.pids[B], signal.SIGSTOP)
        eventually(lambda: partition().isr == [A], 20, "ISR [A] while B is paused")
        acked = asyncio.run(produce_one_batch_per_record(cluster.bootstrap_servers))

        # Step 1: B catches up and A proposes adding it, but A's AlterPartition is held.
        Faults(cluster).hold_alter_partition(A)
        send_signal(cluster.pids[B], signal.SIGCONT)
        eventually(
            lambda: broker_state(cluster, A).held_alter_partition_requests >= 1, 60, "A's held AlterPartition adding B"
        )
        old_epoch = {b.broker_id: b.broker_epoch for b in admin.describe_cluster().brokers}[B]

        # Steps 2-5: B fails, its disk is replaced, it registers with a new epoch and is unfenced.
        Faults(cluster).reboot(B, wipe_disk=True)
        eventually(
            lambda: any(
                b.broker_id == B and b.broker_epoch > old_epoch and not b.fenced
                for b in admin.describe_cluster().brokers
            ),
            30,
            "B registered with a new epoch",
        )

        # Step 6: the stale AlterPartition arrives; then A fails before B has re-replicated the log.
        def answers() -> list[dict]:
            return events(cluster, f"broker-{A}", "alter_partition_accepted") + events(
                cluster, f"broker-{A}", "alter_partition_rejected"
            )

        answered_before = len(answers())
        # A holds what it proposes next: B, wiped and still catching up, would otherwise be shrunk out of the ISR
        # if A's periodic ISR check ran before A fails, and the race would not happen.
        assert Faults(cluster).release_alter_partition(A, keep_holding=True) >= 1
        eventually(lambda: len(answers()) > answered_before, 10, "the controller's answer to the released request")
        Faults(cluster).kill(A)
        eventually(lambda: any(b.broker_id == A and b.fenced for b in admin.describe_cluster().brokers), 20, "A fenced")
        during = partition()
        Faults(cluster).start(A)
        eventually(lambda: partition().leader >= 0 and A in partition().isr, 60, "A back in the ISR")
        ends: list[dict] = []
        read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked), "kip903", ends))
        lost = [(offset, value) for offset, value, _ in acked if read.get(offset) != value]
        rejected = events(cluster, f"broker-{A}", "alter_partition_rejected")
        write_histories(cluster.run_dir, acked, read, ends)
    return {
        "leader_while_a_down": during.leader,
        "isr_while_a_down": during.isr,
        "elr_while_a_down": during.elr,
        "lost": len(lost),
        "acked": len(acked),
        "rejected": [e["error"] for e in rejected],
        "old_epoch_of_b": old_epoch,
        "run_dir": cluster.run_dir,
    }


def analyze_run_dir(spark, run_dir: Path) -> dict[str, dict]:  # noqa: ANN001
    """`minikafka analyze` on the finished run (the cluster is down): every verdict by name."""
    out = run_dir / "report"
    out.mkdir()
    summary = analyze(spark, run_dir, out)
    return {v["name"]: v for v in summary["invariants"]}


def test_kip903_check_keeps_every_acknowledged_record(tmp_path: Path, spark) -> None:  # noqa: ANN001
    outcome = run_race(tmp_path, epoch_check=True)
    print(json.dumps({"epoch_check": True, **outcome}, default=str))
    assert "INELIGIBLE_REPLICA" in outcome["rejected"]
    assert outcome["leader_while_a_down"] != B  # last replica standing: no leader until A returns
    assert (outcome["isr_while_a_down"], outcome["elr_while_a_down"]) == ([], [A])  # KIP-966: A is in the ELR
    assert outcome["lost"] == 0
    verdicts = analyze_run_dir(spark, outcome["run_dir"])
    failed = {name: v["offending_rows"] for name, v in verdicts.items() if v["verdict"] == "fail"}
    assert failed == {}
    assert verdicts["NoCommittedRecordLost"]["checked"] == RECORDS


def test_without_the_check_the_race_loses_acknowledged_records(tmp_path: Path, spark) -> None:  # noqa: ANN001
    outcome = run_race(tmp_path, epoch_check=False)
    print(json.dumps({"epoch_check": False, **outcome}, default=str))
    assert outcome["leader_while_a_down"] == B
    assert outcome["lost"] > 0, "the stale ISR member led with a short log: the loss must be detected"
    # The analysis finds the same story in the logs: the stale epoch committed, the short leader, the lost writes.
    verdicts = analyze_run_dir(spark, outcome["run_dir"])
    stale = verdicts["NoStaleBrokerEpochInIsr"]
    assert stale["verdict"] == "fail"
    assert {(r["broker_id"], r["requested_broker_epoch"]) for r in stale["offending_rows"]} == {
        (B, outcome["old_epoch_of_b"])
    }
    assert verdicts["LeaderCandidateCompleteness"]["verdict"] == "fail"
    assert verdicts["LeaderCandidateCompleteness"]["offending_rows"][0]["node"] == f"broker-{B}"
    assert verdicts["NoCommittedRecordLost"]["violations"] == outcome["lost"]
