"""The simulator's speed against a real chaos run of the same fault schedule, both measured in this run.

    .venv/bin/python benchmarks/sim_speed.py [--seed 5] [--rounds 3] [--search-seeds 10] [--out FILE]

The real run is `minikafka chaos` on a fresh 3+3 cluster of real processes: the simulator's default fault kinds,
one producer at 50 records/s (the simulated producer's rate), `--duration 60`. The simulated run is `minikafka
simulate --seed S` with chaos's plan timing (`--gap-s 3,10 --max-down-s 6`), so both draw the same plan from
`plan_faults`; the benchmark checks that before it starts. Each is a child process.

Figures:
- per core: the real run's wall time against the seed's own CPU (what one core running seeds back to back does
  while one real run takes its course); the issue's goal is 50x;
- the same against the simulating process's CPU, imports included, and the two runs' CPU against each other;
- simulated cluster-seconds per CPU second of the seed;
- a search as a user runs it (`simulate --seeds N --jobs 2`, the default faults and timing): seeds a minute and
  simulated cluster-seconds per wall second on this machine's cores.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from minikafka.deploy.chaos_schedule import CHAOS_TIMING, ChaosPlanConfig, FaultStep, plan_faults
from minikafka.sim.cluster import BROKER_IDS, CONTROLLER_IDS
from minikafka.sim.world import DEFAULT_FAULTS

DURATION_S = 60
RATE_PER_S = 50  # the simulated producer's: one record every 20 ms
CHAOS_BROKERS = (1, 2, 3)  # a local cluster's node ids
CHAOS_CONTROLLERS = (101, 102, 103)
CHAOS_TIMING_ARGS = ("--gap-s", f"{CHAOS_TIMING.min_gap_s:g},{CHAOS_TIMING.max_gap_s:g}",
                     "--max-down-s", f"{CHAOS_TIMING.max_down_s:g}")  # fmt: skip


@dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float  # the child's utime + stime, its own children included once it reaped them
    stdout: str


@dataclass(frozen=True)
class SimRun:
    cpu_s: float  # the seed's own, as `simulate --json` reports it
    process_cpu_s: float
    simulated_s: float
    trace_hash: str
    acknowledged: int
    held: bool


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def minikafka(*args: str) -> list[str]:
    return [sys.executable, "-m", "minikafka.launcher", *args]


def timed(command: list[str], cwd: Path) -> Timed:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[3:])} exited {done.returncode}: {done.stderr.strip()[-600:]}")
    return Timed(wall, cpu, done.stdout)


def schedules(seed: int) -> tuple[list[FaultStep], list[FaultStep]]:
    """The plan chaos draws for the real run and the one simulate draws with chaos's timing."""
    real = plan_faults(seed, DEFAULT_FAULTS, ChaosPlanConfig(DURATION_S, CHAOS_BROKERS, CHAOS_CONTROLLERS))
    simulated = plan_faults(seed, DEFAULT_FAULTS, ChaosPlanConfig(DURATION_S, BROKER_IDS, CONTROLLER_IDS))
    return real, simulated


def real_run(seed: int, scratch: Path) -> dict[str, Any]:
    command = minikafka(
        "chaos", str(scratch / f"chaos-{seed}"), "--duration", str(DURATION_S), "--seed", str(seed),
        "--faults", ",".join(DEFAULT_FAULTS), "--producers", "1", "--rate", str(RATE_PER_S), "--no-analysis",
        "--json",
    )  # fmt: skip
    run = timed(command, scratch)
    summary = json.loads(run.stdout)
    return {
        "wall_s": round(run.wall_s, 2),
        "cpu_s": round(run.cpu_s, 2),
        "faults": [fault["kind"] for fault in summary["faults"]],
        "acknowledged": summary["acknowledged"],
        "lost": summary["lost"],
    }


def simulated_run(seed: int, scratch: Path) -> SimRun:
    run = timed(minikafka("simulate", "--seed", str(seed), *CHAOS_TIMING_ARGS, "--json"), scratch)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    return SimRun(
        round(result["cpu_s"], 3),
        round(run.cpu_s, 3),
        round(result["simulated_s"], 2),
        result["trace_hash"],
        result["acknowledged"],
        result["violation"] is None,
    )


def search(seeds: int, jobs: int, scratch: Path) -> dict[str, Any]:
    """`simulate --seeds N --jobs J` as a user runs it: seeds a minute and simulated seconds per wall second."""
    run = timed(minikafka("simulate", "--seeds", str(seeds), "--jobs", str(jobs), "--json"), scratch)
    results = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    simulated = sum(r["simulated_s"] for r in results)
    return {
        "seeds": len(results),
        "jobs": jobs,
        "held": sum(r["violation"] is None for r in results),
        "wall_s": round(run.wall_s, 1),
        "seeds_per_minute": round(len(results) / run.wall_s * 60, 1),
        "simulated_s_per_wall_s": round(simulated / run.wall_s, 1),
        "simulated_s_per_cpu_s": round(simulated / run.cpu_s, 1),
    }


def measure(seed: int, rounds: int, search_seeds: int, say: Callable[[str], None] = log) -> dict[str, Any]:
    real_plan, simulated_plan = schedules(seed)
    if [(s.kind, s.at_s, s.down_s) for s in real_plan] != [(s.kind, s.at_s, s.down_s) for s in simulated_plan]:
        raise RuntimeError(f"seed {seed}: chaos and simulate would draw different plans")
    scratch = Path(tempfile.mkdtemp(prefix="minikafka-bench-sim-"))
    try:
        say(f"the simulator against a real chaos run: seed {seed}, {len(real_plan)} faults "
            f"({', '.join(s.kind for s in real_plan)}) over {DURATION_S} s ...")  # fmt: skip
        real = real_run(seed, scratch)
        say(f"  real run: {real['wall_s']} s wall, {real['cpu_s']} CPU s; the seed simulated {rounds} times ...")
        runs = [simulated_run(seed, scratch) for _ in range(rounds)]
        say(f"  a search as a user runs it: {search_seeds} seeds on 2 processes ...")
        searched = search(search_seeds, 2, scratch) if search_seeds else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return summarize(seed, real_plan, real, runs, searched)


def summarize(
    seed: int, plan: list[FaultStep], real: dict[str, Any], runs: list[SimRun], searched: dict[str, Any] | None
) -> dict[str, Any]:
    cpu = statistics.median(r.cpu_s for r in runs)
    process_cpu = statistics.median(r.process_cpu_s for r in runs)
    simulated = statistics.median(r.simulated_s for r in runs)
    return {
        "seed": seed,
        "faults": [step.kind for step in plan],
        "real": real,
        "same_schedule": real["faults"] == [step.kind for step in plan],
        "simulated_runs": [asdict(r) for r in runs],
        "same_trace": len({r.trace_hash for r in runs}) == 1,
        "seed_cpu_s": cpu,
        "per_core_ratio": round(real["wall_s"] / cpu, 1),
        "per_core_ratio_with_imports": round(real["wall_s"] / process_cpu, 1),
        "cpu_ratio": round(real["cpu_s"] / cpu, 1),
        "simulated_s_per_cpu_s": round(simulated / cpu, 1),
        "search": searched,
    }


def print_rows(result: dict[str, Any]) -> None:
    real = result["real"]
    print(f"simulator, seed {result['seed']} ({len(result['faults'])} faults): real chaos run {real['wall_s']} s "
          f"wall, {real['cpu_s']} CPU s, faults as planned: {result['same_schedule']}; the seed "
          f"{result['seed_cpu_s']} CPU s (median of {len(result['simulated_runs'])}, same trace: "
          f"{result['same_trace']})")  # fmt: skip
    print(f"simulator per core vs the real run's wall time: {result['per_core_ratio']}x "
          f"({result['per_core_ratio_with_imports']}x with the process's imports); CPU vs CPU "
          f"{result['cpu_ratio']}x; {result['simulated_s_per_cpu_s']} simulated s per CPU s")  # fmt: skip
    searched = result["search"]
    if searched:
        print(f"simulator search, {searched['seeds']} seeds on {searched['jobs']} processes: "
              f"{searched['seeds_per_minute']} seeds a minute, {searched['simulated_s_per_wall_s']} simulated s "
              f"per wall s ({searched['held']} held)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3, help="simulated runs of the seed (the median is reported)")
    parser.add_argument("--search-seeds", type=int, default=10, help="seeds of the search row; 0: none")
    parser.add_argument("--out", help="also write the figures to this JSON file")
    args = parser.parse_args()
    result = measure(args.seed, args.rounds, args.search_seeds)
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print_rows(result)


if __name__ == "__main__":
    main()
