"""Every built-in scenario (but kip-903, which test_kip903_race.py drives with its analysis) with its guard on and
off, as `minikafka scenario run --no-analysis` does: guarded, the promise holds (exit 0); unguarded, the failure the
scenario exists to show (exit 1), each as the scenario predicts from its steps and final read. Without the Spark
analysis (minutes across the runs; the analysis of each story has tests of its own). `pytest -m scenarios`
runs just these. Two test files (guarded, unguarded), so that two test workers share the runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.deploy.scenario.registry import load
from minikafka.deploy.scenario.runner import run_scenario

CASES = [
    ("last-replica-standing", "1", 0),
    ("last-replica-standing", "0", 1),
    ("unclean-election", "false", 0),
    ("unclean-election", "true", 1),
    ("zombie-leader", "all", 0),
    ("zombie-leader", "1", 1),
    ("controlled-shutdown", "controlled", 0),
    ("controlled-shutdown", "kill", 1),
    ("partitioned-broker", "true", 0),
    ("partitioned-broker", "false", 1),
    ("stray-partitions", "true", 0),
    ("stray-partitions", "false", 1),
    ("in-flight-alter-partition", "true", 0),
    ("in-flight-alter-partition", "false", 1),
]


GUARDED = [case for case in CASES if case[2] == 0]
UNGUARDED = [case for case in CASES if case[2] == 1]
MARKS = [pytest.mark.integration, pytest.mark.scenarios, pytest.mark.timeout(600)]


def run_and_check(tmp_path: Path, name: str, value: str, exit_code: int) -> None:
    scenario = load(name)
    outcome = run_scenario(scenario, tmp_path / "run", {scenario.guard.key: value}, analyze=False)
    print(outcome.verdict.line, f"({outcome.seconds} s)")
    assert outcome.error is None, outcome.error
    assert outcome.verdict.as_predicted, (tmp_path / "run" / "report" / "scenario.md").read_text()
    assert outcome.verdict.exit_code == exit_code
    assert "## Verdict" in (tmp_path / "run" / "report" / "scenario.md").read_text()
