"""Paired A/B of produce throughput between two source trees (two commits), for finding where a benchmark line
moved: the machine's drift over a session is larger than the steps looked for, so only rounds that alternate the
trees are compared.

    git worktree add --detach /tmp/old 62afba1
    (py=$PWD/.venv/bin/python; cd /tmp/old && $py setup.py build_ext --inplace)   # where it has _record_walk.c
    .venv/bin/python benchmarks/paired_trees.py --old /tmp/old --new . [--rounds 4] [--kafka-wire]
        [--new-set KEY=VALUE ...]

Each round starts a fresh 3+3 cluster from each tree in turn (its own `minikafka` command line, host network). By
default it creates a 1-partition topic (RF 3, min.insync.replicas 2) and runs `perf produce` over gRPC with 1 KiB
records, 1 in flight and linger.ms 5, with acks=all and then acks=1. With --kafka-wire it creates a 1-partition and
a 6-partition topic and has confluent-kafka produce to each through the Kafka listener with acks=all, as
kafka_wire.py does (the client is this process's, the same for both trees). With --latency it times run_all's
moderate row instead: `perf produce` acks=all at 500 records/s, linger.ms 0, 1 in flight, after a 500-record
warm-up, and takes its p50 and p99 in ms (a ratio above 1 is then the new tree slower). It prints each round, the
broker CPU-seconds each node spent (utime+stime from /proc), and the median of the rounds' new/old ratios; with
--latency also the median without the rounds where a run's p50 is over twice its tree's median.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cluster_settings import SETTINGS as RUN_ALL_SETTINGS
from kafka_wire import confluent_produce
from kafka_wire_cpu import cpu_seconds
from machine_probe import machine_probe_ms, slow_rounds

SETTINGS = tuple(f"{key}={value}" for key, value in RUN_ALL_SETTINGS.items())  # run_all's cluster, as --set
ACKS = ("all", "1")
WIRE_PARTITIONS = (1, 6)


@dataclass(frozen=True)
class Tree:
    name: str
    src: Path
    settings: tuple[str, ...]

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PYTHONPATH=str(self.src))
        # trees from before the launcher started their tool as minikafka.cli
        entry = "minikafka.launcher" if (self.src / "minikafka" / "launcher.py").exists() else "minikafka.cli"
        done = subprocess.run([sys.executable, "-m", entry, *args], env=env, capture_output=True, text=True, cwd="/tmp")
        if check and done.returncode != 0:
            raise SystemExit(f"{self.name}: minikafka {' '.join(args[:2])} failed: {done.stderr[-800:]}")
        return done

    @classmethod
    def checkout(cls, name: str, path: Path, settings: tuple[str, ...] = ()) -> Tree:
        """The tree of a checkout (its src/), refused if its C record walk is missing or another commit's."""
        tree = cls(name, path.resolve() / "src", settings)
        check_native_walk(tree)
        return tree

    def cluster_up(self, prefix: str) -> str:
        """A fresh 3+3 cluster of this tree's (run_all's settings, on the host's network where the tree has the
        option); its run directory."""
        run_dir = tempfile.mkdtemp(prefix=f"{prefix}-{self.name}-")
        host = ["--network", "host"] if "--network" in self.cli("cluster", "up", "--help").stdout else []
        sets = [arg for setting in SETTINGS + self.settings for arg in ("--set", setting)]
        self.cli("cluster", "up", "--dir", run_dir, *host, *sets)
        return run_dir


@dataclass(frozen=True)
class Run:
    # MB/s by shape (acks, or the topic's partitions with --kafka-wire); with --latency the p50 and p99 in ms
    figures: dict[str, float]
    broker_cpu_s: dict[str, list[float]]  # by produce run, each broker's, largest first
    probe_ms: float  # the machine probe before the cluster started (machine_probe.py)


def check_native_walk(tree: Tree) -> None:
    """A tree with the C record walk must run with its own build of it: a module built from another commit's source
    may lack the function this tree imports, and the tree then walks records in Python without a word."""
    source = tree.src / "minikafka" / "common" / "_record_walk.c"
    if not source.exists():
        return
    imports = re.findall(r"from minikafka\.common\._record_walk import (\w+)", _python_sources(tree.src))
    names = sorted(set(imports))
    check = f"import sys, minikafka.common._record_walk as m; missing = [n for n in {names!r} if not hasattr(m, n)]; "
    check += "sys.exit(', '.join(missing) or None)"
    env = dict(os.environ, PYTHONPATH=str(tree.src))
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True, cwd="/tmp")
    if done.returncode != 0:
        raise SystemExit(
            f"{tree.name}: its C record walk is missing or from another commit ({done.stderr.strip()[-200:]}); "
            f"build it: cd {tree.src.parent} && {sys.executable} setup.py build_ext --inplace"
        )


def _python_sources(src: Path) -> str:
    return "\n".join(path.read_text() for path in (src / "minikafka").rglob("*.py"))


def isrs(node: object) -> list[list[int]]:
    """Every "isr" list in a `topics describe --json` answer."""
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "isr"] + [i for k, v in node.items() if k != "isr" for i in isrs(v)]
    if isinstance(node, list):
        return [i for v in node for i in isrs(v)]
    return []


def wait_for_full_isr(tree: Tree, run_dir: str, topic: str = "p1", deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        described = tree.cli("topics", "describe", topic, "--json", "--dir", run_dir, check=False).stdout
        try:
            found = isrs(json.loads(described))
        except ValueError:
            found = []
        if found and all(sorted(isr) == [1, 2, 3] for isr in found):
            return
        time.sleep(0.3)  # the followers joining the ISR: nothing to wait on from here but the metadata
    raise SystemExit(f"{tree.name}: the ISR did not fill in {deadline_s} s")


def create_topic(tree: Tree, run_dir: str, topic: str, partitions: int) -> None:
    tree.cli("topics", "create", topic, "--partitions", str(partitions), "--replication-factor", "3",
             "--config", "min.insync.replicas=2", "--dir", run_dir)  # fmt: skip
    wait_for_full_isr(tree, run_dir, topic)


def one_run(tree: Tree, records: int, mode: str) -> Run:
    probe_ms = machine_probe_ms()
    run_dir = tree.cluster_up("paired")
    try:
        cluster = json.loads(Path(run_dir, "cluster.json").read_text())
        brokers = [entry["pid"] for entry in cluster["brokers"] if entry.get("pid")]
        figures: dict[str, float] = {}
        cpu: dict[str, list[float]] = {}
        for shape, produce in _shapes(tree, run_dir, cluster, records, mode):
            before = [cpu_seconds(pid) for pid in brokers]
            figures.update(produce())
            spent = [round(cpu_seconds(pid) - start, 2) for pid, start in zip(brokers, before, strict=True)]
            cpu[shape] = sorted(spent, reverse=True)
        return Run(figures, cpu, probe_ms)
    finally:
        tree.cli("cluster", "down", "--dir", run_dir, check=False)
        shutil.rmtree(run_dir, ignore_errors=True)


def _shapes(
    tree: Tree, run_dir: str, cluster: dict[str, Any], records: int, mode: str
) -> Iterator[tuple[str, Callable[[], dict[str, float]]]]:
    """(shape, a produce returning its figures) in turn, each topic created and its ISR full before its produce."""
    if mode == "latency":
        create_topic(tree, run_dir, "p1", 1)
        _moderate_produce(tree, run_dir, 500)  # connections up, followers fetching
        shape = "acks=all@500/s"
        yield shape, lambda: {f"{shape} {k[:3]} ms": v for k, v in _moderate_produce(tree, run_dir, records).items()}
        return
    if mode == "kafka-wire":
        bootstrap = ",".join(entry["kafka_address"] for entry in cluster["brokers"] if entry.get("kafka_address"))
        for partitions in WIRE_PARTITIONS:
            topic = f"p{partitions}"
            create_topic(tree, run_dir, topic, partitions)
            confluent_produce(bootstrap, topic, min(records, 2000))  # warm-up
            yield topic, lambda topic=topic: _wire_produce(bootstrap, topic, records)
        return
    create_topic(tree, run_dir, "p1", 1)
    for acks in ACKS:
        yield f"acks={acks}", lambda acks=acks: {f"acks={acks}": _perf_produce(tree, run_dir, acks, records)}


def _perf_produce(tree: Tree, run_dir: str, acks: str, records: int) -> float:
    done = tree.cli("perf", "produce", "p1", "--num-records", str(records), "--record-size", "1024",
                    "--acks", acks, "--producer-props", "linger.ms=5",
                    "max.in.flight.requests.per.connection=1", "--dir", run_dir, "--json")  # fmt: skip
    return float(json.loads(done.stdout.strip().splitlines()[-1])["mb_per_s"])


def _wire_produce(bootstrap: str, topic: str, records: int) -> dict[str, float]:
    """{topic: MB/s} of confluent-kafka producing `records` 1 KiB records to `topic`."""
    return {topic: records * 1024 / confluent_produce(bootstrap, topic, records) / 1e6}


def _moderate_produce(tree: Tree, run_dir: str, records: int) -> dict[str, float]:
    done = tree.cli("perf", "produce", "p1", "--num-records", str(records), "--record-size", "1024",
                    "--acks", "all", "--throughput", "500", "--producer-props", "linger.ms=0",
                    "max.in.flight.requests.per.connection=1", "--dir", run_dir, "--json")  # fmt: skip
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return {"p50_ms": float(result["p50_ms"]), "p99_ms": float(result["p99_ms"])}


def pair_arguments(doc: str | None, rounds: int) -> argparse.ArgumentParser:
    """The arguments every paired benchmark of two trees takes: the checkouts, the rounds, the records a run."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("--old", type=Path, required=True, help="a checkout (its src/ is used)")
    parser.add_argument("--new", type=Path, required=True, help="a checkout (its src/ is used)")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--records", type=int, default=20000)
    return parser


def main() -> None:
    parser = pair_arguments(__doc__, rounds=4)
    parser.add_argument("--kafka-wire", action="store_true", help="confluent-kafka through the Kafka listener")
    parser.add_argument("--latency", action="store_true", help="acks=all p50/p99 at 500 records/s (--records 5000)")
    parser.add_argument("--old-set", nargs="*", default=[], help="extra cluster settings for the old tree")
    parser.add_argument("--new-set", nargs="*", default=[], help="extra cluster settings for the new tree")
    args = parser.parse_args()
    trees = {
        "old": Tree.checkout("old", args.old, tuple(args.old_set)),
        "new": Tree.checkout("new", args.new, tuple(args.new_set)),
    }
    ratios: dict[str, list[float]] = {}
    rounds: list[dict[str, Run]] = []
    for number in range(args.rounds):
        order = ("old", "new") if number % 2 == 0 else ("new", "old")  # turns cancel the machine's drift
        mode = "latency" if args.latency else "kafka-wire" if args.kafka_wire else "grpc"
        runs = {name: one_run(trees[name], args.records, mode) for name in order}
        rounds.append(runs)
        for key, figure in runs["new"].figures.items():
            ratios.setdefault(key, []).append(figure / runs["old"].figures[key])
        unit = "ms" if args.latency else "MB/s"
        print(f"round {number + 1}: " + "; ".join(
            f"{name} {unit} {runs[name].figures} broker CPU-s {runs[name].broker_cpu_s} probe ms {runs[name].probe_ms}"
            for name in ("old", "new")
        ), flush=True)  # fmt: skip
    for shape, values in ratios.items():
        spread = f"{min(values):.3f}-{max(values):.3f}"
        print(f"{shape}: new/old median {statistics.median(values):.3f} (range {spread})")
    print_quiet_host(rounds, ratios)
    if args.latency:
        print_undisturbed(rounds, ratios)


def print_quiet_host(rounds: list[dict[str, Run]], ratios: dict[str, list[float]]) -> None:
    """The medians again over the rounds where the machine probe saw the host as quick as before its quickest run,
    for both trees: a slow period of the host costs a run up to twice the CPU for the same records."""
    for shape, values in ratios.items():
        slow = slow_rounds([(runs["old"].probe_ms, runs["new"].probe_ms) for runs in rounds])
        kept = [value for n, value in enumerate(values) if n not in slow]
        if slow and kept:
            spread = f"{min(kept):.3f}-{max(kept):.3f}"
            print(f"{shape}: rounds on a quick host ({len(kept)} of {len(values)}): new/old median "
                  f"{statistics.median(kept):.3f} (range {spread})")  # fmt: skip


def print_undisturbed(rounds: list[dict[str, Run]], ratios: dict[str, list[float]]) -> None:
    """The medians again without the rounds where a run's p50 is over twice its tree's median p50. On this
    two-core machine a run now and then takes 3-6 ms at p50 against 1.7, in either tree, with the same broker CPU
    per record (its cause is not known); a tree that is slower throughout moves its median too, so it is not
    dropped."""
    key = "acks=all@500/s p50 ms"
    medians = {name: statistics.median(runs[name].figures[key] for runs in rounds) for name in ("old", "new")}
    disturbed = [n for n, runs in enumerate(rounds) if any(runs[t].figures[key] > 2 * medians[t] for t in medians)]
    if not disturbed or len(disturbed) == len(rounds):
        return
    for shape, values in ratios.items():
        kept = [value for n, value in enumerate(values) if n not in disturbed]
        spread = f"{min(kept):.3f}-{max(kept):.3f}"
        print(f"{shape}: without disturbed rounds {[n + 1 for n in disturbed]}: median "
              f"{statistics.median(kept):.3f} (range {spread})")  # fmt: skip


if __name__ == "__main__":
    main()
