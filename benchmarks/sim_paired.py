"""Paired A/B of a simulated seed's CPU between two source trees: each run is `minikafka simulate --seed S --json`
as a child process with one tree's src/ on its path, the two trees in turn and the order alternating round by round
(the machine's drift over a run is larger than the differences looked for).

    .venv/bin/python -m compileall -q /tmp/old/src src      # both trees byte-compiled, as an installed one is
    .venv/bin/python benchmarks/sim_paired.py --old /tmp/old --new . [--seeds 1-5] [--rounds 3] [-- SIMULATE_ARGS]

It prints each run, then per seed whether the trees ran the same trace (the trace hash), and the median and range of
the old/new ratios of the seed's own CPU (`cpu_s`) and of the child process's CPU (rusage, imports included).
It exits 1 when a seed's trace differs between the trees (the nodes did something else).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Run:
    tree: str
    seed: int
    cpu_s: float  # the seed's own, as `simulate --json` reports it
    process_cpu_s: float  # the child's utime + stime
    trace_hash: str
    held: bool


def simulate(tree: str, src: Path, seed: int, extra: list[str]) -> Run:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [sys.executable, "-m", "minikafka.launcher", "simulate", "--seed", str(seed), "--json", *extra]
    done = subprocess.run(
        command, env=dict(os.environ, PYTHONPATH=str(src)), capture_output=True, text=True, cwd="/tmp", check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"{tree} seed {seed}: no result (exit {done.returncode}): {done.stderr[-800:]}")
    result = json.loads(lines[-1])
    process_cpu_s = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Run(tree, seed, result["cpu_s"], process_cpu_s, result["trace_hash"], result["violation"] is None)


def parse_seeds(text: str) -> list[int]:
    seeds: list[int] = []
    for part in text.split(","):
        first, _, last = part.partition("-")
        seeds += range(int(first), int(last or first) + 1)
    return seeds


def summary(name: str, ratios: list[float]) -> str:
    return f"{name} old/new median {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True, help="a checkout (its src/ is used)")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--seeds", default="1-5", help="e.g. 1-5 or 1,3,7")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("simulate_args", nargs="*", help="more `minikafka simulate` options, after --")
    args = parser.parse_args()
    trees = {"old": args.old.resolve() / "src", "new": args.new.resolve() / "src"}
    runs: list[Run] = []
    for round_number in range(args.rounds):
        for index, seed in enumerate(parse_seeds(args.seeds)):
            order = ["old", "new"] if (round_number + index) % 2 == 0 else ["new", "old"]
            for tree in order:
                run = simulate(tree, trees[tree], seed, args.simulate_args)
                runs.append(run)
                figures = f"cpu_s {run.cpu_s:.3f} process {run.process_cpu_s:.3f} trace {run.trace_hash}"
                print(f"round {round_number + 1} seed {seed} {tree}: {figures}{'' if run.held else ' VIOLATION'}")
    same = True
    cpu: list[float] = []
    process: list[float] = []
    for seed in parse_seeds(args.seeds):
        old = [r for r in runs if r.seed == seed and r.tree == "old"]
        new = [r for r in runs if r.seed == seed and r.tree == "new"]
        hashes = {r.trace_hash for r in old} | {r.trace_hash for r in new}
        same &= len(hashes) == 1
        print(f"seed {seed}: {'same trace ' + hashes.pop() if len(hashes) == 1 else 'TRACES DIFFER: ' + str(hashes)}")
        cpu += [o.cpu_s / n.cpu_s for o, n in zip(old, new, strict=True)]
        process += [o.process_cpu_s / n.process_cpu_s for o, n in zip(old, new, strict=True)]
    print(summary("seed cpu_s", cpu))
    print(summary("process CPU", process))
    total_old = sum(r.cpu_s for r in runs if r.tree == "old")
    total_new = sum(r.cpu_s for r in runs if r.tree == "new")
    print(f"seed cpu_s total old {total_old:.2f} new {total_new:.2f}; load {os.getloadavg()}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
