"""Paired rounds over a chain of source trees (commits in history order), for splitting a range of history into
steps in one run: each round runs every tree once, in an order rotated and reversed from round to round, and each
tree is compared with its predecessor in the chain within the same round.

    .venv/bin/python benchmarks/paired_chain.py --rounds 3 /tmp/g-A /tmp/g-B /tmp/g-C

The produce is `paired_trees.py`'s (a fresh 3+3 cluster per tree per round, 20,000 records of 1 KiB, 1 partition,
RF 3, 1 in flight, acks=all then acks=1). It prints every run, then for each step the median and range of the
rounds' MB/s ratios and of the brokers' summed CPU-seconds ratios.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from machine_probe import slow_rounds
from paired_trees import Run, Tree, one_run


def round_order(count: int, number: int) -> list[int]:
    """Round `number`'s order of the trees: rotated by the round, reversed every other round."""
    order = list(range(count))
    order = order[number % count :] + order[: number % count]
    return order[::-1] if number % 2 else order


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", type=Path, nargs="+", help="checkouts in history order (their src/ is used)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--records", type=int, default=20000)
    args = parser.parse_args()
    trees = [Tree.checkout(path.resolve().name, path) for path in args.trees]
    rounds: list[dict[int, Run]] = []
    for number in range(args.rounds):
        runs: dict[int, Run] = {}
        for index in round_order(len(trees), number):
            runs[index] = one_run(trees[index], args.records, "grpc")
            print(f"round {number + 1} {trees[index].name}: MB/s {runs[index].figures} "
                  f"broker CPU-s {runs[index].broker_cpu_s} probe ms {runs[index].probe_ms}", flush=True)  # fmt: skip
        rounds.append(runs)
    for index in range(1, len(trees)):
        for shape in rounds[0][index].figures:
            speed = [runs[index].figures[shape] / runs[index - 1].figures[shape] for runs in rounds]
            cpu = [sum(runs[index].broker_cpu_s[shape]) / sum(runs[index - 1].broker_cpu_s[shape]) for runs in rounds]
            print(f"{trees[index].name}/{trees[index - 1].name} {shape}: MB/s median {statistics.median(speed):.3f} "
                  f"({min(speed):.3f}-{max(speed):.3f}), broker CPU-s median {statistics.median(cpu):.3f} "
                  f"({min(cpu):.3f}-{max(cpu):.3f}), {len(speed)} rounds")  # fmt: skip
    print_quiet_steps(trees, rounds)


def print_quiet_steps(trees: list[Tree], rounds: list[dict[int, Run]]) -> None:
    """Each step's MB/s median again over the rounds where the machine probe saw the host quick for both trees."""
    for index in range(1, len(trees)):
        for shape in rounds[0][index].figures:
            slow = slow_rounds([(runs[index - 1].probe_ms, runs[index].probe_ms) for runs in rounds])
            kept = [
                runs[index].figures[shape] / runs[index - 1].figures[shape]
                for n, runs in enumerate(rounds)
                if n not in slow
            ]
            if kept and len(kept) < len(rounds):
                print(f"{trees[index].name}/{trees[index - 1].name} {shape}: on a quick host ({len(kept)} of "
                      f"{len(rounds)} rounds) MB/s median {statistics.median(kept):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
