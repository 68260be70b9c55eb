"""Network-partition scenarios against a running cluster, measured from the run's event logs.

Run in the test's own process for a host-mode run, or inside the run's namespace for a netns run (the nodes'
addresses are only reachable there): `minikafka cluster exec --dir RUN -- python partition_scenarios.py RUN`
prints the scenario's result as one JSON line and exits non-zero when a check fails.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from cluster_fixtures import eventually  # noqa: E402

from minikafka.client.admin import AdminClient  # noqa: E402
from minikafka.common.errors import ErrorCode  # noqa: E402
from minikafka.deploy.faults import Faults  # noqa: E402
from minikafka.deploy.local_cluster import Cluster  # noqa: E402
from minikafka.deploy.scenario import clients  # noqa: E402
from minikafka.deploy.scenario.clients import consume_partition, produce_raw  # noqa: E402

TOPIC = "seed003"
# Seconds-scale failure detection; the broker fences itself 2 s after the controllers fence it.
SEED003_SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": "3000",
    "broker.self.fencing.enable": "true",
    "broker.self.fencing.timeout.ms": "5000",
}


def events(run_dir: Path, name: str) -> list[dict]:
    found = []
    for path in sorted((run_dir / "logs").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            if f'"{name}"' in line:
                event = json.loads(line)
                if event.get("event") == name:
                    found.append({**event, "file": path.stem})
    return sorted(found, key=lambda e: e["ts"])


def seconds(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def first_after(run_dir: Path, name: str, after: float, match: dict) -> dict | None:
    for event in events(run_dir, name):
        if seconds(event["ts"]) >= after and all(event.get(k) == v for k, v in match.items()):
            return event
    return None


async def consume_all(bootstrap: list[str], topic: str = TOPIC, ends: list[dict] | None = None) -> dict[int, bytes]:
    """offset -> value of partition 0 (the scenario's final read); with `ends`, also where the read stopped."""
    read = await consume_partition(bootstrap, topic, None, ends)
    return {offset: value.encode() for offset, value in read.items()}


def seed003(cluster: Cluster) -> dict:
    """Seed 003: the leader of a partition is cut from every controller, not from the other brokers nor clients."""
    run = cluster.run_dir
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    admin.create_topic(TOPIC, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    eventually(lambda: len(admin.describe_topics([TOPIC])[0].partitions[0].isr) == 3, 30, "a full ISR")
    victim = admin.describe_topics([TOPIC])[0].partitions[0].leader
    victim_address = cluster.node(victim).address
    assert produce_raw(victim_address, b"before", acks=-1, topic=TOPIC)[0] is ErrorCode.NONE

    cut = Faults(cluster).partition(frozenset({victim}), frozenset(c.node_id for c in cluster.controllers))
    cut_at = seconds(events(run, "fault_injected")[-1]["ts"])
    assert cut.one_way is False

    # While it still believes it leads, nothing it is sent with acks=all may be acknowledged and later lost.
    acknowledged: dict[int, bytes] = {}
    answers: list[str] = []

    def self_fenced() -> dict | None:
        value = f"during-{len(answers)}".encode()
        code, offset = produce_raw(victim_address, value, acks=-1, topic=TOPIC, timeout_s=1.0)
        answers.append(code.name)
        if code is ErrorCode.NONE:
            acknowledged[offset] = value
        return first_after(run, "self_fenced", cut_at, {"broker_id": victim})

    self_fence = eventually(self_fenced, 60, "the cut broker fencing itself", interval_s=0)
    fence = eventually(lambda: first_after(run, "broker_fenced", cut_at, {"broker_id": victim}), 30, "fenced")
    moved = eventually(
        lambda: next(
            (e for e in events(run, "partition_changed") if seconds(e["ts"]) >= cut_at
             and e.get("topic") == TOPIC and e.get("leader") not in (victim, None, -1)),
            None,
        ),
        30,
        "a new leader elected from the ISR",
    )  # fmt: skip
    # Fenced by itself, it answers as a replica that no longer leads.
    refused = eventually(
        lambda: (lambda c: c if c is ErrorCode.NOT_LEADER_OR_FOLLOWER else None)(
            produce_raw(victim_address, b"after-self-fence", acks=-1, topic=TOPIC)[0]
        ),
        20,
        "NOT_LEADER_OR_FOLLOWER from the self-fenced broker",
    )
    new_leader = moved["leader"]
    assert victim not in (moved.get("isr") or []), moved  # fenced: out of the ISR until it catches up again
    assert new_leader in (b.node_id for b in cluster.brokers) and new_leader != victim
    assert produce_raw(cluster.node(new_leader).address, b"new-leader", acks=-1, topic=TOPIC)[0] is ErrorCode.NONE

    Faults(cluster).heal()
    healed_at = time.time()
    others = [b.address for b in cluster.brokers if b.node_id != victim]
    viewer = AdminClient(cluster.bootstrap_controllers, others, timeout_s=5, tls=cluster.admin_tls)
    eventually(lambda: victim in viewer.describe_topics([TOPIC])[0].partitions[0].isr, 60, "the victim back in ISR")
    rejoined_s = time.time() - healed_at
    read = asyncio.run(consume_all(cluster.bootstrap_servers))
    lost = sorted(offset for offset, value in acknowledged.items() if read.get(offset) != value)
    assert not lost, f"acks=all writes acknowledged by the cut broker and lost: offsets {lost}"
    return {
        "victim": victim,
        "new_leader": new_leader,
        "isr_after_fence": moved.get("isr"),
        "self_fence_ms": round((seconds(self_fence["ts"]) - cut_at) * 1000),
        "controller_fence_ms": round((seconds(fence["ts"]) - cut_at) * 1000),
        "new_leader_ms": round((seconds(moved["ts"]) - cut_at) * 1000),
        "rejoined_isr_after_heal_s": round(rejoined_s, 1),
        "acks_all_answers_during_cut": sorted(set(answers)),
        "acknowledged_during_cut": len(acknowledged),
        "self_fenced_answer": refused.name,
        "mode": cluster.network.cuts_mode,
    }


def produce_many(
    address: str, prefix: str, count: int, acks: int, topic: str, history: list | None = None
) -> dict[int, bytes]:
    """`count` single-record Produce calls to `address`; the acknowledged ones by offset (with `history`, also as
    (write, acks) pairs for `write_histories`)."""
    acked = clients.produce_many(address, prefix, count, acks, topic)
    if history is not None:
        history.extend((write, clients.acks_name(acks)) for write in acked)
    return {write.offset: write.value.encode() for write in acked}


def zombie_leader(cluster: Cluster, acks: int, topic_suffix: str) -> dict:
    """A partition's leader is isolated from every node (producers still reach it) while the others elect a new
    leader; writes are sent to the zombie with `acks`, then the cut heals and the final log is read back."""
    topic = f"zombie-{topic_suffix}"
    run = cluster.run_dir
    admin = AdminClient(cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls)
    admin.create_topic(topic, partitions=1, replication_factor=3, configs={"min.insync.replicas": "2"})
    eventually(lambda: len(admin.describe_topics([topic])[0].partitions[0].isr) == 3, 30, "a full ISR")
    zombie = admin.describe_topics([topic])[0].partitions[0].leader
    produced: list = []
    before = produce_many(cluster.node(zombie).address, "before", 5, acks=-1, topic=topic, history=produced)
    assert len(before) == 5

    Faults(cluster).isolate(zombie)
    cut = events(run, "fault_injected")[-1]
    cut_at = seconds(cut["ts"])
    moved = eventually(
        lambda: next(
            (e for e in events(run, "partition_changed") if seconds(e["ts"]) >= cut_at
             and e.get("topic") == topic and e.get("leader") not in (zombie, None, -1)),
            None,
        ),
        30,
        "a new leader elected without the zombie",
    )  # fmt: skip
    # The zombie still believes it leads: it is the one producers reach with these writes.
    to_zombie = produce_many(cluster.node(zombie).address, "zombie", 20, acks=acks, topic=topic, history=produced)
    new_leader = cluster.node(moved["leader"]).address
    to_new_leader = produce_many(new_leader, "new-leader", 5, acks=-1, topic=topic, history=produced)
    assert len(to_new_leader) == 5

    Faults(cluster).heal()
    others = [b.address for b in cluster.brokers if b.node_id != zombie]
    viewer = AdminClient(cluster.bootstrap_controllers, others, timeout_s=5, tls=cluster.admin_tls)
    eventually(lambda: zombie in viewer.describe_topics([topic])[0].partitions[0].isr, 60, "the zombie back in ISR")
    ends: list[dict] = []
    read = asyncio.run(consume_all(cluster.bootstrap_servers, topic, ends))
    clients.write_histories(run, topic, produced, {o: v.decode() for o, v in read.items()}, ends)
    # Offsets are compared one write at a time: the zombie and the new leader both wrote at the same offsets.
    kept_elsewhere = all(read.get(o) == v for o, v in {**before, **to_new_leader}.items())
    return {
        "zombie": zombie,
        "acks": acks,
        "acknowledged_by_zombie": len(to_zombie),
        "lost_offsets": sorted(o for o, v in to_zombie.items() if read.get(o) != v),
        "acks_all_writes_elsewhere_kept": kept_elsewhere,
        "mode": cluster.network.cuts_mode,
        "topic": topic,
        "cut": cut["target"],
    }


if __name__ == "__main__":
    cluster = Cluster.load(Path(sys.argv[1]))
    scenario = sys.argv[2] if len(sys.argv) > 2 else "seed003"
    if scenario == "seed003":
        print(json.dumps(seed003(cluster)))
    else:
        print(json.dumps([zombie_leader(cluster, acks, name) for acks, name in ((1, "acks1"), (-1, "acksall"))]))
