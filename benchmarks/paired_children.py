"""Paired in-process measurements between two source trees: each measurement runs the benchmark's own script as a
child process with one tree's src/ first on its path, the trees alternating round by round (the machine's drift
over a run is larger than the differences looked for). The child prints its figures as one JSON line."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any


def run_child(script: str, tree: Path, partitions: int, count: int) -> dict[str, Any]:
    """`script --child --partitions N --fetches COUNT` under `tree`'s code: its last line, parsed."""
    env = dict(os.environ, PYTHONPATH=str(tree.resolve() / "src"))
    args = [sys.executable, script, "--child", "--partitions", str(partitions), "--fetches", str(count)]
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
