"""A new leader that has appended nothing must still answer a follower's divergence correctly (real processes).

Replicas X=1, L=2, F=3 (in that order), RF 3, min ISR 2. Records are acknowledged with acks=all; then leadership
moves to L (epoch 1, nothing appended) and back to X (epoch 2). With L paused, X appends one acks=1 record that F
fetches and L does not. X is killed and L is elected in epoch 3 with nothing appended in it; F fetches from L with
last fetched epoch 2. L is killed as soon as F has acted on L's answer, so F, still in the ISR, becomes leader.

Before the fix L answered an undefined divergence, F cut its log to its start and was elected holding a fraction
of the acknowledged records: they were lost for good once the others followed it. Now L caches its epoch when it
becomes leader, F drops only X's unacknowledged record, and nothing acknowledged is lost.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from cluster_fixtures import eventually, running_cluster
from test_broker_replication import consume_all
from test_kip903_race import broker_state

from minikafka.client.admin import AdminClient
from minikafka.client.producer import Producer, ProducerConfig
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import send_signal

pytestmark = pytest.mark.integration

X, L, F = 1, 2, 3
TOPIC = "epochs"
WAKE = "wake"
RECORDS = 1500
SETTINGS = {
    "broker.session.timeout.ms": "2500",
    "broker.heartbeat.interval.ms": "250",
    "replica.lag.time.max.ms": "20000",  # nobody is shrunk out of the ISR by the short pauses
    "replica.fetch.max.bytes": "1",  # one batch per fetch: re-copying a wiped log takes seconds
}


async def produce(
    bootstrap: list[str], count: int, acks: int, prefix: str, topic: str = TOPIC
) -> list[tuple[int, str]]:
    producer = Producer(bootstrap, ProducerConfig(acks=acks, linger_ms=0, batch_size=1))
    futures = [
        (f"{prefix}-{i:05d}", await producer.send(topic, f"{prefix}-{i:05d}".encode(), partition=0))
        for i in range(count)
    ]
    acked = [((await future).offset, value) for value, future in futures]
    await producer.close()
    return acked


def log_end_offset(cluster, broker_id: int, topic: str = TOPIC) -> int:  # noqa: ANN001
    return next(p.log_end_offset for p in broker_state(cluster, broker_id).partitions if p.topic == topic)


def truncations(cluster, broker_id: int) -> list[dict]:  # noqa: ANN001
    path = cluster.run_dir / "logs" / f"broker-{broker_id}.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [e for e in lines if e["event"] == "log_truncated" and e.get("partition", TOPIC + "-0") == TOPIC + "-0"]


def test_a_follower_keeps_acknowledged_records_when_a_new_leader_has_appended_nothing(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", **SETTINGS) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic(TOPIC, assignment=[[X, L, F]], configs={"min.insync.replicas": "2"})
        admin.create_topic(WAKE, assignment=[[X, L, F]])
        partition = lambda: admin.describe_topics([TOPIC])[0].partitions[0]  # noqa: E731
        eventually(lambda: partition().isr == [X, L, F], 30, "ISR [X, L, F]")
        acked = asyncio.run(produce(cluster.bootstrap_servers, RECORDS, acks=-1, prefix="all"))
        assert len(acked) == RECORDS

        def back_in_isr(leader: int, leader_epoch: int) -> bool:
            # Judged with the leader epoch: a broker that was paused answers from its stale metadata at first.
            now = partition()
            return now.leader == leader and now.leader_epoch == leader_epoch and now.isr == [X, L, F]

        def move_leadership_away_from(paused: int, to: int) -> None:
            epoch = partition().leader_epoch
            send_signal(cluster.pids[paused], signal.SIGSTOP)
            eventually(lambda: partition().leader == to and partition().leader_epoch > epoch, 30, f"{to} elected")
            send_signal(cluster.pids[paused], signal.SIGCONT)
            eventually(lambda: back_in_isr(to, epoch + 1), 30, f"broker {paused} back in the ISR")

        move_leadership_away_from(X, to=L)  # L leads an epoch and appends nothing in it
        move_leadership_away_from(L, to=X)  # X leads a newer epoch
        epoch_of_x = partition().leader_epoch

        # X appends one acks=1 record that F fetches and the paused L does not. A record to another partition first
        # answers the Fetch that L may have parked at X before it was paused (F's copy shows it was answered).
        # The producers bootstrap from X and F only: a metadata request to the paused L would hang for its whole
        # timeout, and L, paused past its session timeout, would be fenced and leave the ISR.
        reachable = [cluster.node(X).address, cluster.node(F).address]
        send_signal(cluster.pids[L], signal.SIGSTOP)
        asyncio.run(produce(reachable, 1, acks=1, prefix="wake", topic=WAKE))
        eventually(lambda: log_end_offset(cluster, F, WAKE) == 1, 10, "F holds the record that wakes every fetch")
        asyncio.run(produce(reachable, 1, acks=1, prefix="one"))
        eventually(lambda: log_end_offset(cluster, F) == RECORDS + 1, 10, "F holds X's acks=1 record")
        before = len(truncations(cluster, F))
        Faults(cluster).kill(X)
        send_signal(cluster.pids[L], signal.SIGCONT)
        eventually(lambda: partition().leader == L and partition().leader_epoch > epoch_of_x, 30, "L elected")
        assert log_end_offset(cluster, L) == RECORDS

        # F acts on L's answer to its Fetch; L fails at once, before F can copy anything back.
        cut = eventually(lambda: truncations(cluster, F)[before:], 30, "F truncating on L's answer")[0]
        Faults(cluster).kill(L)
        eventually(lambda: partition().leader == F, 30, "F elected")
        Faults(cluster).start(X)
        Faults(cluster).start(L)
        eventually(lambda: sorted(partition().isr) == [X, L, F], 60, "every replica back in the ISR")

        read = asyncio.run(consume_all(cluster.bootstrap_servers, RECORDS, TOPIC))
        lost = [offset for offset, value in acked if read.get(offset) != value]
        assert lost == [], f"{len(lost)} acknowledged records lost; F truncated {cut}"
        assert cut["new_log_end_offset"] == RECORDS  # only X's unacknowledged record was cut
