"""Every built-in scenario with its guard on and off, as `minikafka scenario run --no-analysis` does: guarded, the
promise holds (exit 0); unguarded, the failure the scenario exists to show (exit 1), each as the scenario predicts
from its steps and final read. Without the Spark analysis (a minute a run on a shared machine), but for the runs
analyzed where their analysis is tested: kip-903 (test_kip903_race.py), last-replica-standing
(test_last_replica_standing.py) and zombie-leader with acks=1 (test_network_partitions.py). `pytest -m scenarios`
runs just these. Two test files (guarded, unguarded), so that two test workers share the runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.deploy.analysis.report import analyze, write_reports
from minikafka.deploy.scenario.model import ScenarioOutcome
from minikafka.deploy.scenario.registry import load
from minikafka.deploy.scenario.runner import run_scenario

CASES = [
    ("unclean-election", "false", 0),
    ("unclean-election", "true", 1),
    ("zombie-leader", "all", 0),
    ("controlled-shutdown", "controlled", 0),
    ("controlled-shutdown", "kill", 1),
    ("partitioned-broker", "true", 0),
    ("partitioned-broker", "false", 1),
    ("stray-partitions", "true", 0),
    ("stray-partitions", "false", 1),
    ("in-flight-alter-partition", "true", 0),
    ("in-flight-alter-partition", "false", 1),
    ("disruptive-controller", "true", 0),
    ("disruptive-controller", "false", 1),
    ("controller-disk-loss", "true", 0),
    ("controller-disk-loss", "false", 1),
    ("hanging-transaction", "true", 0),
    ("hanging-transaction", "false", 1),
    ("delayed-end-txn", "2", 0),
    ("stolen-producer-id", "true", 0),
    ("stolen-producer-id", "false", 1),
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


def analyzed_scenario(tmp_path: Path, spark, name: str, overrides: dict[str, str]) -> ScenarioOutcome:  # noqa: ANN001
    """`minikafka scenario run NAME --set ...`, analyzed on the test run's Spark session (a fresh one per run
    would cost its start-up and JIT warm-up each time)."""

    def analyzer(run_dir: Path) -> dict:
        out = run_dir / "report"
        out.mkdir(exist_ok=True)
        return write_reports(analyze(spark, run_dir, out), out)

    outcome = run_scenario(load(name), tmp_path / "run", overrides, analyzer=analyzer)
    print(outcome.verdict.line, f"({outcome.seconds} s, analysis {outcome.analysis_seconds} s)")
    return outcome


def verdicts(outcome: ScenarioOutcome) -> dict[str, dict]:
    """The analysis's verdicts by invariant name."""
    assert outcome.analysis is not None
    return {v["name"]: v for v in outcome.analysis["invariants"]}
