"""Incremental fetch sessions (KIP-227) against full follower fetches, measured in one run.

    .venv/bin/python benchmarks/fetch_sessions.py [--idle-partitions 60] [--records 30000] [--rounds 2]

Starts local 3+3 clusters in turns, one with `max.incremental.fetch.session.cache.slots=0` (every follower Fetch
lists and answers every partition it follows from that leader) and one with sessions (the default), each holding
the measured 1-partition topic beside an idle topic of `--idle-partitions` partitions, all RF 3 and
min.insync.replicas 2. Each round produces 1 KiB records to the 1-partition topic with acks=1 and acks=all, one
request in flight, on both clusters; the turns cancel the shared machine's drift. Prints the median MB/s of each
and the ratio of sessions to full fetches, and writes the rounds to --out.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported (common/grpc_environment.py)

# isort: split
import argparse
import json
import shutil
import statistics
import tempfile
from pathlib import Path
from typing import Any

import structlog
from cluster_settings import SETTINGS
from run_all import log, produce

from minikafka.client.admin import AdminClient
from minikafka.deploy import cluster_commands
from minikafka.deploy.workload import wait_for_full_isrs

HERE = Path(__file__).resolve().parent
MODES = {"full fetches": "0", "fetch sessions": "1000"}  # max.incremental.fetch.session.cache.slots


def one_cluster(slots: str, idle_partitions: int, records: int) -> dict[str, float]:
    run_dir = Path(tempfile.mkdtemp(prefix="minikafka-bench-sessions-"))
    cluster = cluster_commands.up(run_dir, 3, 3, {**SETTINGS, "max.incremental.fetch.session.cache.slots": slots})
    try:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=30, tls=cluster.admin_tls
        )
        for topic, partitions in (("measured", 1), ("idle", idle_partitions)):
            admin.create_topic(topic, partitions, 3, {"min.insync.replicas": "2"})
            admin.wait_for_topic(topic, 30)
            wait_for_full_isrs(admin, topic, 60)
        return {name: produce(cluster, "measured", records, acks)["mb_per_s"] for acks, name in ((1, "1"), (-1, "all"))}
    finally:
        cluster_commands.down(cluster)
        shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--idle-partitions", type=int, default=60)
    parser.add_argument("--records", type=int, default=30000, help="records per produce measurement")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", default=str(HERE / "fetch_sessions.json"))
    args = parser.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    rounds: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for number in range(1, args.rounds + 1):
        for mode, slots in MODES.items():
            log(f"round {number}/{args.rounds}: {mode}, 1 partition beside {args.idle_partitions} idle ...")
            rounds[mode].append(one_cluster(slots, args.idle_partitions, args.records))
    results: dict[str, Any] = {"idle_partitions": args.idle_partitions, "records": args.records, "rounds": rounds}
    print(f"{'acks':<6}{'full fetches MB/s':>20}{'fetch sessions MB/s':>22}{'ratio':>8}")
    for acks in ("1", "all"):
        full, sessions = (statistics.median(r[acks] for r in rounds[mode]) for mode in MODES)
        results[f"acks{acks}_ratio"] = round(sessions / full, 3)
        print(f"{acks:<6}{full:>20.2f}{sessions:>22.2f}{sessions / full:>8.2f}")
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    log(f"rounds written to {args.out}")


if __name__ == "__main__":
    main()
