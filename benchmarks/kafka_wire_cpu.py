"""Broker CPU per MB acknowledged through the Kafka listener: a wall-clock-free figure for a busy machine.

    PYTHONPATH=src .venv/bin/python benchmarks/kafka_wire_cpu.py [--records 20000] [--rounds 3]

confluent-kafka produces `records` 1 KiB records with acks=all to a 1-partition and a 6-partition topic (RF 3, min
ISR 2) on a 3+3 cluster, as kafka_wire.py does; each round reads utime+stime of every node from /proc/<pid>/stat
before and after, and reports CPU-s per MB for the partition leader(s), the other brokers and the controllers.
The machine's other load still moves the figure (by half, seen here): compare versions run in turn, not apart.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported

# isort: split
import argparse
import json
import os
import shutil
import statistics
import tempfile
from pathlib import Path

from kafka_wire import RECORD_SIZE, confluent_produce, create_minikafka_topic, wait_for_leaders

from minikafka.deploy.local_cluster import Cluster

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime (fields 14 and 15 of stat)


def leaders(bootstrap: str, topic: str) -> set[int]:
    from confluent_kafka.admin import AdminClient

    described = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10).topics[topic]
    return {p.leader for p in described.partitions.values()}


def measure(cluster: Cluster, records: int, rounds: int) -> dict[str, dict[str, object]]:
    brokers = {b.node_id: cluster.pids[b.node_id] for b in cluster.brokers}
    controllers = [cluster.pids[c.node_id] for c in cluster.controllers]
    mb = records * RECORD_SIZE / 1e6
    results: dict[str, dict[str, object]] = {}
    for partitions in (1, 6):
        topic = f"cpu-{partitions}"
        create_minikafka_topic(cluster, topic, partitions)
        wait_for_leaders(cluster.kafka_bootstrap_servers, topic, partitions, 60)
        lead = leaders(cluster.kafka_bootstrap_servers, topic)
        confluent_produce(cluster.kafka_bootstrap_servers, topic, min(records, 2000))  # warm-up
        rows: dict[str, list[float]] = {"brokers": [], "leaders": [], "followers": [], "controllers": []}
        for number in range(1, rounds + 1):
            before = {n: cpu_seconds(p) for n, p in brokers.items()}
            before_c = sum(cpu_seconds(p) for p in controllers)
            confluent_produce(cluster.kafka_bootstrap_servers, topic, records)
            spent = {n: cpu_seconds(p) - before[n] for n, p in brokers.items()}
            rows["brokers"].append(sum(spent.values()) / mb)
            rows["leaders"].append(sum(s for n, s in spent.items() if n in lead) / mb)
            rows["followers"].append(sum(s for n, s in spent.items() if n not in lead) / mb)
            rows["controllers"].append((sum(cpu_seconds(p) for p in controllers) - before_c) / mb)
            shown = ", ".join(f"{k} {v[-1]:.4f}" for k, v in rows.items())
            print(f"p{partitions} round {number}: {shown}", flush=True)
        results[f"p{partitions}"] = {
            "leader_ids": sorted(lead),
            **{
                k: {"median": round(statistics.median(v), 4), "min": round(min(v), 4), "max": round(max(v), 4)}
                for k, v in rows.items()
            },
        }
    return results


def main() -> None:
    import structlog
    from cluster_settings import SETTINGS

    from minikafka.deploy import cluster_commands

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="leave the cluster up (prints its run directory)")
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    run_dir = Path(tempfile.mkdtemp(prefix="minikafka-wire-cpu-"))
    cluster = cluster_commands.up(run_dir, 3, 3, SETTINGS)
    try:
        results = measure(cluster, args.records, args.rounds)
    finally:
        if args.keep:
            print(f"cluster left up in {run_dir}")
        else:
            cluster_commands.down(cluster)
            shutil.rmtree(run_dir, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
