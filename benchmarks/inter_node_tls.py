"""The cost of mutual TLS between nodes, measured in one run: the same cluster with SSL node-to-node links (the
default) and with PLAINTEXT ones, in turns.

    .venv/bin/python benchmarks/inter_node_tls.py [--records 10000] [--rounds 2] [--topics 30]

Each round starts a 3+3 cluster with `security.inter.broker.protocol=SSL`, then one with PLAINTEXT (the turns
cancel the shared machine's drift), and on each: produces 1 KiB records to a 1-partition RF 3 topic
(min.insync.replicas 2) with acks=1 and acks=all, one request in flight (acks=all waits for followers' fetches over
the inter-broker link), then creates `--topics` topics one at a time through the active controller (the admin's
calls and the controllers' Raft replication both cross node-to-node links). Prints the median of each and the
ratio TLS / plaintext, and writes the rounds to --out.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported (common/grpc_environment.py)

# isort: split
import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import structlog
from cluster_settings import SETTINGS
from run_all import log, produce

from minikafka.client.admin import AdminClient
from minikafka.deploy import cluster_commands
from minikafka.deploy.workload import wait_for_full_isrs

HERE = Path(__file__).resolve().parent
MODES = ("SSL", "PLAINTEXT")  # security.inter.broker.protocol


def one_cluster(protocol: str, records: int, topics: int) -> dict[str, float]:
    run_dir = Path(tempfile.mkdtemp(prefix="minikafka-bench-tls-"))
    cluster = cluster_commands.up(run_dir, 3, 3, {**SETTINGS, "security.inter.broker.protocol": protocol})
    try:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=30, tls=cluster.admin_tls
        )
        admin.create_topic("measured", 1, 3, {"min.insync.replicas": "2"})
        admin.wait_for_topic("measured", 30)
        wait_for_full_isrs(admin, "measured", 60)
        result = {
            f"acks{name}_mb_per_s": produce(cluster, "measured", records, acks)["mb_per_s"]
            for acks, name in ((1, "1"), (-1, "all"))
        }
        started = time.monotonic()
        for index in range(topics):
            admin.create_topic(f"created-{index}", 1, 3)
        result["create_topics_per_s"] = round(topics / (time.monotonic() - started), 1)
        return result
    finally:
        cluster_commands.down(cluster)
        shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=10000, help="records per produce measurement")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--topics", type=int, default=30, help="topics created one at a time per cluster")
    parser.add_argument("--out", default=str(HERE / "inter_node_tls.json"))
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    rounds: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for number in range(1, args.rounds + 1):
        for mode in MODES:
            log(f"round {number}/{args.rounds}: node-to-node {mode} ...")
            rounds[mode].append(one_cluster(mode, args.records, args.topics))
    results: dict[str, Any] = {"records": args.records, "topics": args.topics, "rounds": rounds}
    print(f"{'measurement':<22}{'SSL':>12}{'PLAINTEXT':>12}{'ratio':>8}")
    for key in ("acks1_mb_per_s", "acksall_mb_per_s", "create_topics_per_s"):
        tls, plain = (statistics.median(r[key] for r in rounds[mode]) for mode in MODES)
        results[f"{key}_ratio"] = round(tls / plain, 3)
        print(f"{key:<22}{tls:>12.2f}{plain:>12.2f}{tls / plain:>8.2f}")
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    log(f"rounds written to {args.out}")


if __name__ == "__main__":
    main()
