"""Paired A/B of two source trees on two clusters kept up side by side: many short alternating rounds, for steps
smaller than a fresh cluster a round lets paired_trees.py see.

    .venv/bin/python benchmarks/paired_live.py --old /tmp/old --new . [--rounds 16] [--records 20000] [--acks all]

Each tree starts its own 3+3 cluster once (its own `minikafka` command line, host network, run_all's settings) with
a 1-partition topic (RF 3, min.insync.replicas 2). Then, round by round and in alternating order, each tree's own
`perf produce` writes `--records` 1 KiB records with one request in flight (linger.ms 5) to its cluster while the
other cluster idles. A round gives, per tree, the MB/s perf reports and the CPU-seconds its three brokers spent per
MB (utime+stime from /proc, the leader's apart): the CPU is the steadier figure, since it does not count the time a
run waits for a core. It prints each round and the medians of the rounds' new/old ratios, also over the rounds
started on a quick host (machine_probe.py); a ratio of CPU per MB above 1 is the new tree dearer.
"""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kafka_wire_cpu import cpu_seconds
from machine_probe import machine_probe_ms, slow_rounds
from paired_trees import Tree, create_topic, pair_arguments

RECORD_KB = 1024


@dataclass(frozen=True)
class LiveCluster:
    tree: Tree
    run_dir: str
    brokers: dict[int, int]  # node id -> pid


@dataclass(frozen=True)
class Measured:
    mb_per_s: float
    cpu_s_per_mb: float  # the three brokers'
    leader_cpu_s_per_mb: float
    probe_ms: float


@contextmanager
def live_cluster(tree: Tree) -> Iterator[LiveCluster]:
    run_dir = tree.cluster_up("paired-live")
    try:
        described = json.loads(Path(run_dir, "cluster.json").read_text())
        brokers = {entry["id"]: entry["pid"] for entry in described["brokers"] if entry.get("pid")}
        create_topic(tree, run_dir, "p1", 1)
        yield LiveCluster(tree, run_dir, brokers)
    finally:
        tree.cli("cluster", "down", "--dir", run_dir, check=False)
        shutil.rmtree(run_dir, ignore_errors=True)


def leaders(node: object) -> list[int]:
    """Every "leader" in a `topics describe --json` answer (its shape differs between trees)."""
    if isinstance(node, dict):
        found = [int(node["leader"])] if isinstance(node.get("leader"), int) else []
        return found + [leader for value in node.values() for leader in leaders(value)]
    if isinstance(node, list):
        return [leader for value in node for leader in leaders(value)]
    return []


def leader_of(cluster: LiveCluster) -> int:
    done = cluster.tree.cli("topics", "describe", "p1", "--json", "--dir", cluster.run_dir)
    [leader] = leaders(json.loads(done.stdout))
    return leader


def produce(cluster: LiveCluster, records: int, acks: str) -> Measured:
    probe_ms = machine_probe_ms()
    leader = leader_of(cluster)
    before = {node: cpu_seconds(pid) for node, pid in cluster.brokers.items()}
    done = cluster.tree.cli("perf", "produce", "p1", "--num-records", str(records), "--record-size", str(RECORD_KB),
                            "--acks", acks, "--producer-props", "linger.ms=5",
                            "max.in.flight.requests.per.connection=1", "--dir", cluster.run_dir, "--json")  # fmt: skip
    spent = {node: cpu_seconds(pid) - before[node] for node, pid in cluster.brokers.items()}
    mb = records * RECORD_KB / 1e6
    mb_per_s = float(json.loads(done.stdout.strip().splitlines()[-1])["mb_per_s"])
    return Measured(mb_per_s, sum(spent.values()) / mb, spent[leader] / mb, probe_ms)


def summarize(rounds: list[dict[str, Measured]]) -> dict[str, dict[str, float]]:
    """Each figure's new/old median and range, over every round and over the rounds started on a quick host."""
    slow = slow_rounds([(r["old"].probe_ms, r["new"].probe_ms) for r in rounds])
    summary: dict[str, dict[str, float]] = {}
    for figure in ("mb_per_s", "cpu_s_per_mb", "leader_cpu_s_per_mb"):
        ratios = [getattr(r["new"], figure) / getattr(r["old"], figure) for r in rounds]
        quick = [ratio for n, ratio in enumerate(ratios) if n not in slow] or ratios
        summary[figure] = {
            "median": round(statistics.median(ratios), 3),
            "low": round(min(ratios), 3),
            "high": round(max(ratios), 3),
            "quick_host_median": round(statistics.median(quick), 3),
            "quick_host_rounds": len(quick),
        }
    return summary


def main() -> None:
    parser = pair_arguments(__doc__, rounds=16)
    parser.add_argument("--acks", default="all")
    parser.add_argument("--out", type=Path, help="append the summary as one JSON line")
    args = parser.parse_args()
    trees = {name: Tree.checkout(name, path) for name, path in (("old", args.old), ("new", args.new))}
    rounds: list[dict[str, Measured]] = []
    with ExitStack() as stack:
        clusters = {name: stack.enter_context(live_cluster(tree)) for name, tree in trees.items()}
        for name in clusters:
            produce(clusters[name], min(args.records, 2000), args.acks)  # connections up, followers fetching
        for number in range(args.rounds):
            order = ("old", "new") if number % 2 == 0 else ("new", "old")
            runs = {name: produce(clusters[name], args.records, args.acks) for name in order}
            rounds.append(runs)
            print(f"round {number + 1}: " + "; ".join(
                f"{name} {runs[name].mb_per_s:.2f} MB/s, brokers {runs[name].cpu_s_per_mb:.4f} CPU-s/MB "
                f"(leader {runs[name].leader_cpu_s_per_mb:.4f}), probe {runs[name].probe_ms:.1f} ms"
                for name in ("old", "new")
            ), flush=True)  # fmt: skip
    summary = summarize(rounds)
    for figure, values in summary.items():
        print(f"{figure}: new/old median {values['median']} ({values['low']}-{values['high']}); "
              f"quick host {values['quick_host_median']} over {values['quick_host_rounds']} rounds")  # fmt: skip
    if args.out:
        with args.out.open("a") as out:
            out.write(json.dumps({"old": str(args.old), "new": str(args.new), **summary}) + "\n")


if __name__ == "__main__":
    main()
