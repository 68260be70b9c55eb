"""Paired in-process measurements between two source trees: each measurement runs the benchmark's own script as a
child process with one tree's src/ first on its path, the trees alternating round by round (the machine's drift
over a run is larger than the differences looked for). The child prints its figures as one JSON line."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PairedBenchmark:
    """What one in-process paired benchmark measures, and how its command line reads."""

    script: str  # the benchmark's own file, run again as each child
    description: str
    sizes_help: str  # what --partitions counts
    fetches_help: str  # what --fetches counts
    total: int  # default --fetches: total // partitions, at least `minimum`
    minimum: int
    figure: str  # the child's figure compared between the trees
    out: Path
    also: str | None = None  # a figure of the new tree's carried along


def paired_main(benchmark: PairedBenchmark, measure_child: Callable[[int, int], Awaitable[dict[str, Any]]]) -> None:
    """The command line of a paired benchmark: as a child, measure one size; else run the paired rounds."""
    parser = argparse.ArgumentParser(description=benchmark.description)
    parser.add_argument("--old", type=Path, help="a checkout (its src/ is used)")
    parser.add_argument("--new", type=Path, default=Path(benchmark.script).resolve().parent.parent)
    parser.add_argument("--partitions", default="1000,10000", help=f"{benchmark.sizes_help}, comma-separated")
    parser.add_argument(
        "--fetches", type=int, default=0, help=f"{benchmark.fetches_help} (default: {benchmark.total:,} / partitions)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(benchmark.out))
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(size) for size in args.partitions.split(",")]
    if args.child:
        print(json.dumps(asyncio.run(measure_child(sizes[0], args.fetches))))
        return
    if args.old is None:
        parser.error("--old is required")
    trees = {"old": args.old, "new": args.new}
    results = paired_rounds(
        benchmark.script,
        trees,
        sizes,
        lambda size: args.fetches or max(benchmark.minimum, benchmark.total // size),
        args.rounds,
        benchmark.figure,
        also=benchmark.also,
    )
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


def run_child(script: str, tree: Path, partitions: int, count: int, extra: Sequence[str] = ()) -> dict[str, Any]:
    """`script --child --partitions N --fetches COUNT [extra...]` under `tree`'s code: its last line, parsed."""
    env = dict(os.environ, PYTHONPATH=str(tree.resolve() / "src"))
    args = [sys.executable, script, "--child", "--partitions", str(partitions), "--fetches", str(count), *extra]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{tree}: {done.stderr[-1500:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def paired_rounds(
    script: str,
    trees: dict[str, Path],
    sizes: list[int],
    count_for: Callable[[int], int],
    rounds: int,
    figure: str,
    also: str | None = None,
) -> dict[str, Any]:
    """For each size, `rounds` rounds of one child per tree ("old", "new", alternating who goes first): each
    round's `figure` of both and their new/old ratio (with the new tree's `also`), and the median ratio."""
    results: dict[str, Any] = {}
    for size in sizes:
        count = count_for(size)
        entries: list[dict[str, float]] = []
        for number in range(rounds):
            order = ("old", "new") if number % 2 == 0 else ("new", "old")
            measured = {name: run_child(script, trees[name], size, count) for name in order}
            run = {name: measured[name][figure] for name in order}
            extra = {f"{also}_new": measured["new"][also]} if also else {}
            entries.append({**run, "ratio": run["new"] / run["old"], **extra})
            print(f"{size} partitions, round {number + 1}: old {run['old']:.1f} us, new {run['new']:.1f} us, "
                  f"new/old {run['new'] / run['old']:.4f}", flush=True)  # fmt: skip
        ratios = [entry["ratio"] for entry in entries]
        results[str(size)] = {"fetches": count, "rounds": entries, "median_ratio": statistics.median(ratios)}
        print(f"{size} partitions: new/old median {statistics.median(ratios):.4f} "
              f"(range {min(ratios):.4f}-{max(ratios):.4f})", flush=True)  # fmt: skip
    results["load_average"] = os.getloadavg()
    return results
