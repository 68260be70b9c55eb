"""Paired A/B of gRPC-path produce throughput between two source trees (two commits), for finding where a
benchmark line moved: the machine's drift over a session is larger than the steps looked for, so only rounds that
alternate the trees are compared.

    git worktree add --detach /tmp/old 62afba1
    .venv/bin/python benchmarks/paired_trees.py --old /tmp/old --new . [--rounds 4] [--new-set KEY=VALUE ...]

Each round starts a fresh 3+3 cluster from each tree in turn (its own `minikafka` command line, host network),
creates a 1-partition topic (RF 3, min.insync.replicas 2), and runs `perf produce` with 1 KiB records, 1 in flight
and linger.ms 5, with acks=all and then acks=1. It prints each round, the broker CPU-seconds each node spent
(utime+stime from /proc), and the median of the rounds' new/old ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kafka_wire_cpu import cpu_seconds
from run_all import SETTINGS as RUN_ALL_SETTINGS

SETTINGS = tuple(f"{key}={value}" for key, value in RUN_ALL_SETTINGS.items())  # run_all's cluster, as --set
ACKS = ("all", "1")


@dataclass(frozen=True)
class Tree:
    name: str
    src: Path
    settings: tuple[str, ...]

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONPATH=str(self.src))
        done = subprocess.run(
            [sys.executable, "-m", "minikafka.cli", *args], env=env, capture_output=True, text=True, cwd="/tmp"
        )
        if check and done.returncode != 0:
            raise SystemExit(f"{self.name}: minikafka {' '.join(args[:2])} failed: {done.stderr[-800:]}")
        return done


@dataclass(frozen=True)
class Run:
    mb_per_s: dict[str, float]  # by acks
    broker_cpu_s: dict[str, list[float]]  # by acks, each broker's, largest first


def isrs(node: object) -> list[list[int]]:
    """Every "isr" list in a `topics describe --json` answer."""
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "isr"] + [i for k, v in node.items() if k != "isr" for i in isrs(v)]
    if isinstance(node, list):
        return [i for v in node for i in isrs(v)]
    return []


def wait_for_full_isr(tree: Tree, run_dir: str, deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        described = tree.cli("topics", "describe", "p1", "--json", "--dir", run_dir, check=False).stdout
        try:
            found = isrs(json.loads(described))
        except ValueError:
            found = []
        if found and all(sorted(isr) == [1, 2, 3] for isr in found):
            return
        time.sleep(0.3)  # the followers joining the ISR: nothing to wait on from here but the metadata
    raise SystemExit(f"{tree.name}: the ISR did not fill in {deadline_s} s")


def one_run(tree: Tree, records: int) -> Run:
    run_dir = tempfile.mkdtemp(prefix=f"paired-{tree.name}-")
    host = ["--network", "host"] if "--network" in tree.cli("cluster", "up", "--help").stdout else []
    sets = [arg for setting in SETTINGS + tree.settings for arg in ("--set", setting)]
    tree.cli("cluster", "up", "--dir", run_dir, *host, *sets)
    try:
        tree.cli("topics", "create", "p1", "--partitions", "1", "--replication-factor", "3",
                 "--config", "min.insync.replicas=2", "--dir", run_dir)  # fmt: skip
        wait_for_full_isr(tree, run_dir)
        cluster = json.loads(Path(run_dir, "cluster.json").read_text())
        brokers = [entry["pid"] for entry in cluster["brokers"] if entry.get("pid")]
        mb_per_s, cpu = {}, {}
        for acks in ACKS:
            before = [cpu_seconds(pid) for pid in brokers]
            done = tree.cli("perf", "produce", "p1", "--num-records", str(records), "--record-size", "1024",
                            "--acks", acks, "--producer-props", "linger.ms=5",
                            "max.in.flight.requests.per.connection=1", "--dir", run_dir, "--json")  # fmt: skip
            mb_per_s[acks] = json.loads(done.stdout.strip().splitlines()[-1])["mb_per_s"]
            spent = [round(cpu_seconds(pid) - start, 2) for pid, start in zip(brokers, before, strict=True)]
            cpu[acks] = sorted(spent, reverse=True)
        return Run(mb_per_s, cpu)
    finally:
        tree.cli("cluster", "down", "--dir", run_dir, check=False)
        shutil.rmtree(run_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout (its src/ is used)")
    parser.add_argument("--new", type=Path, required=True, help="a checkout (its src/ is used)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--old-set", nargs="*", default=[], help="extra cluster settings for the old tree")
    parser.add_argument("--new-set", nargs="*", default=[], help="extra cluster settings for the new tree")
    args = parser.parse_args()
    trees = {
        "old": Tree("old", args.old.resolve() / "src", tuple(args.old_set)),
        "new": Tree("new", args.new.resolve() / "src", tuple(args.new_set)),
    }
    ratios: dict[str, list[float]] = {acks: [] for acks in ACKS}
    for number in range(args.rounds):
        order = ("old", "new") if number % 2 == 0 else ("new", "old")  # turns cancel the machine's drift
        runs = {name: one_run(trees[name], args.records) for name in order}
        for acks in ACKS:
            ratios[acks].append(runs["new"].mb_per_s[acks] / runs["old"].mb_per_s[acks])
        print(f"round {number + 1}: " + "; ".join(
            f"{name} MB/s {runs[name].mb_per_s} broker CPU-s {runs[name].broker_cpu_s}" for name in ("old", "new")
        ), flush=True)  # fmt: skip
    for acks, values in ratios.items():
        spread = f"{min(values):.3f}-{max(values):.3f}"
        print(f"acks={acks}: new/old median {statistics.median(values):.3f} (range {spread})")


if __name__ == "__main__":
    main()
