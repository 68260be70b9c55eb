"""sim_speed.py's figures from its runs: the per-core ratio is the real run's wall time over the seed's median CPU,
a real run whose faults differ from the plan says so, and run_all's guard holds the ratio to its floor."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # the benchmarks are scripts, not a package

from run_all_guards import evaluate  # noqa: E402 - found on the path added above
from sim_speed import SimRun, schedules, summarize  # noqa: E402

GUARD = "simulator per core vs a real chaos run's wall time"


def run(cpu_s: float, trace: str = "e69c60729dea0553") -> SimRun:
    return SimRun(cpu_s, cpu_s + 1.5, 68.2, trace, 2962, True)


def real(faults: list[str]) -> dict[str, object]:
    return {"wall_s": 68.0, "cpu_s": 30.0, "faults": faults, "acknowledged": 3000, "lost": 0}


def test_the_ratios_come_from_the_real_runs_wall_and_the_seeds_median_cpu() -> None:
    plan, _ = schedules(5)
    kinds = [step.kind for step in plan]
    result = summarize(5, plan, real(kinds), [run(3.4), run(4.0), run(3.2)], None)
    assert result["seed_cpu_s"] == 3.4
    assert result["per_core_ratio"] == 20.0
    assert result["per_core_ratio_with_imports"] == round(68.0 / 4.9, 1)
    assert result["cpu_ratio"] == round(30.0 / 3.4, 1)
    assert result["same_schedule"] and result["same_trace"]


def test_a_real_run_that_struck_other_faults_or_runs_of_other_traces_are_told() -> None:
    plan, _ = schedules(5)
    result = summarize(5, plan, real(["kill"]), [run(3.0), run(3.0, trace="0000000000000000")], None)
    assert not result["same_schedule"]
    assert not result["same_trace"]


def test_both_commands_draw_one_plan_for_the_seed() -> None:
    chaos, simulate = schedules(5)
    assert [(s.kind, s.at_s, s.down_s) for s in chaos] == [(s.kind, s.at_s, s.down_s) for s in simulate]
    assert len(chaos) == 6


def test_the_guard_breaks_below_its_floor_and_the_target_is_fifty() -> None:
    found = {(row["guard"], row["kind"]): row["held"] for row in evaluate({"simulator": {"per_core_ratio": 8.0}})}
    assert found[(GUARD, "floor")] is False
    assert found[(GUARD, "target")] is False
    found = {(row["guard"], row["kind"]): row["held"] for row in evaluate({"simulator": {"per_core_ratio": 51.0}})}
    assert found[(GUARD, "floor")] is True and found[(GUARD, "target")] is True
