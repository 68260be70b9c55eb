"""The paired benchmarks' summaries (benchmarks/paired_trees.py, paired_chain.py): a round that started while the
machine probe saw the host slow is left out of the quick-host medians, for either tree of a pair."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # the benchmarks are scripts, not a package

from machine_probe import disturbed, machine_probe_ms  # noqa: E402 - found on the path added above
from paired_chain import print_quiet_steps  # noqa: E402
from paired_trees import Run, Tree, print_quiet_host  # noqa: E402


def run(mb_per_s: float, probe_ms: float) -> Run:
    return Run({"acks=all": mb_per_s}, {"acks=all": [1.0, 0.5, 0.5]}, probe_ms)


def test_a_run_probed_well_above_the_quickest_is_disturbed() -> None:
    assert disturbed([15.5, 15.9, 22.0, 16.0]) == [2]
    assert disturbed([15.0, 17.0]) == []  # within 15%
    assert disturbed([]) == []


def test_the_probe_times_its_fixed_work() -> None:
    assert machine_probe_ms(0.05) > 0


def test_a_pairs_quick_host_median_leaves_out_the_round_either_tree_started_slow(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rounds = [
        {"old": run(10.0, 15.0), "new": run(9.0, 15.2)},
        {"old": run(5.0, 22.0), "new": run(9.0, 15.1)},  # the old tree's run started in a slow period
        {"old": run(10.0, 15.3), "new": run(8.0, 15.0)},
    ]
    print_quiet_host(rounds, {"acks=all": [0.9, 1.8, 0.8]})
    assert "rounds on a quick host (2 of 3): new/old median 0.850 (range 0.800-0.900)" in capsys.readouterr().out


def test_a_chain_step_keeps_only_rounds_quick_for_both_of_its_trees(capsys: pytest.CaptureFixture[str]) -> None:
    trees = [Tree(name, Path(name), ()) for name in ("a", "b", "c")]
    rounds = [
        {0: run(10.0, 15.0), 1: run(8.0, 15.0), 2: run(8.0, 15.0)},
        {0: run(10.0, 15.0), 1: run(4.0, 23.0), 2: run(8.0, 15.0)},  # tree b's run started slow
        {0: run(10.0, 15.0), 1: run(9.0, 15.0), 2: run(9.0, 15.0)},
    ]
    print_quiet_steps(trees, rounds)
    printed = capsys.readouterr().out
    assert "b/a acks=all: on a quick host (2 of 3 rounds) MB/s median 0.850" in printed
    assert "c/b acks=all: on a quick host (2 of 3 rounds) MB/s median 1.000" in printed


def test_paired_live_finds_the_leader_in_either_trees_describe_answer() -> None:
    from paired_live import leaders

    assert leaders([{"name": "p1", "partitions": [{"partition": 0, "leader": 2, "isr": [2, 1, 3]}]}]) == [2]
    assert leaders({"topics": [{"partitions": [{"leader": 3}]}]}) == [3]


def test_paired_live_summary_leaves_out_rounds_on_a_slow_host_only_in_its_quick_median() -> None:
    from paired_live import Measured, summarize

    def pair(old_cpu: float, new_cpu: float, new_probe_ms: float = 15.0) -> dict[str, Measured]:
        return {
            "old": Measured(10.0, old_cpu, old_cpu / 2, 15.0),
            "new": Measured(8.0, new_cpu, new_cpu / 2, new_probe_ms),
        }

    summary = summarize([pair(0.10, 0.12), pair(0.10, 0.13), pair(0.10, 0.20, new_probe_ms=22.0)])
    assert summary["cpu_s_per_mb"]["median"] == 1.3 and summary["cpu_s_per_mb"]["high"] == 2.0
    assert summary["cpu_s_per_mb"]["quick_host_median"] == 1.25 and summary["cpu_s_per_mb"]["quick_host_rounds"] == 2
    assert summary["mb_per_s"]["median"] == 0.8
