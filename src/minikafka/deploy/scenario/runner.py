"""`minikafka scenario run`: start the scenario's own cluster, drive its steps, stop the cluster, run analyze,
write RUN/report/scenario.md (and a section of report.html), and judge."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from pathlib import Path

from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import ClusterError, is_alive, kill, new_run_dir, validate_overrides
from minikafka.deploy.scenario.clients import ClientLoop
from minikafka.deploy.scenario.model import ScenarioOutcome
from minikafka.deploy.scenario.registry import ScenarioError, ScenarioModule
from minikafka.deploy.scenario.render import render_html_section, render_markdown
from minikafka.deploy.scenario.steps import StepFailed, Steps
from minikafka.deploy.scenario.verdict import explained_losses, judge

Log = Callable[[str], None]
Analyzer = Callable[[Path], dict]


def _settings(scenario: ScenarioModule, overrides: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The guard's value for this run and the cluster's settings (the scenario's, then the user's)."""
    guard = scenario.guard
    value = overrides.get(guard.key, guard.on)
    if value not in (guard.on, guard.off) and not guard.cluster_config:
        raise ScenarioError(f"{guard.key} is {guard.on} (guarded) or {guard.off} (unguarded) here, not '{value}'")
    settings = {**scenario.topology.settings, **overrides}
    if guard.cluster_config:
        settings[guard.key] = value
    else:
        settings.pop(guard.key, None)
    validate_overrides(settings)  # a typo fails in one line before any process starts
    return value, settings


def _drive(scenario: ScenarioModule, steps: Steps) -> str | None:
    """Run the scenario's steps; the reason it stopped early, if it did."""
    try:
        scenario.module.run(steps)
    except StepFailed as failed:
        return str(failed)
    except Exception as error:  # noqa: BLE001 - a step outside the step API failed: the run still ends cleanly
        return f"step {len(steps.records) + 1}: {type(error).__name__}: {error}"
    return None


def analyze_in_new_session(run_dir: Path) -> dict:
    """`minikafka analyze RUN`: a Spark session of its own, the report written under RUN/report/."""
    from minikafka.deploy.analysis.report import analyze_run

    return analyze_run(run_dir)


def _analyze(run_dir: Path, analyzer: Analyzer, log: Log) -> dict:
    log("running the Spark analysis ...")
    try:
        return analyzer(run_dir)
    except Exception as error:  # noqa: BLE001 - reported in the scenario's report, not as a traceback
        return {"error": f"{type(error).__name__}: {error}", "verdict": "error"}


def run_scenario(
    scenario: ScenarioModule,
    run_dir: Path | None = None,
    overrides: Mapping[str, str] | None = None,
    analyze: bool = True,
    log: Log = print,
    analyzer: Analyzer = analyze_in_new_session,
) -> ScenarioOutcome:
    """`analyzer`: how the finished run is analyzed (a test passes one using its own Spark session)."""
    started = time.monotonic()
    overrides = dict(overrides or {})
    guard_value, settings = _settings(scenario, overrides)
    run_dir = (run_dir or new_run_dir()).resolve()
    if (run_dir / "cluster.json").exists():
        raise ScenarioError(f"{run_dir} already holds a run; a scenario starts its own cluster: give a new directory")
    topology = scenario.topology
    log(f"{scenario.name}: starting {topology.controllers}+{topology.brokers} nodes in {run_dir} "
        f"({scenario.guard.key}={guard_value}) ...")  # fmt: skip
    cluster = cluster_commands.up(
        run_dir, topology.controllers, topology.brokers, settings, 60.0, "host", dynamic_quorum=topology.dynamic_quorum
    )
    loop = ClientLoop()
    steps = Steps(cluster, guard_value == scenario.guard.on, guard_value, loop)
    try:
        error = _drive(scenario, steps)
    finally:
        loop.close()
        steps.admin.close()
        log("stopping the cluster ...")
        cluster_commands.down(cluster, timeout_s=10)
        for pid in cluster.pids.values():
            if is_alive(pid):
                kill(pid)
    analysis_started = time.monotonic()
    analysis = _analyze(run_dir, analyzer, log) if analyze else None
    analysis_seconds = round(time.monotonic() - analysis_started, 1)
    verdict = judge(
        scenario.name, scenario.guard, guard_value, steps.records, steps.tallies, error,
        None if analysis is None else analysis["verdict"], explained_losses(analysis),
    )  # fmt: skip
    outcome = ScenarioOutcome(
        scenario.name, scenario.title, scenario.guard, guard_value, overrides, str(run_dir), tuple(steps.records),
        tuple(steps.tallies), error, analysis, round(time.monotonic() - started, 1), verdict, analysis_seconds,
    )  # fmt: skip
    write_report(outcome, run_dir / "report")
    return outcome


def to_json(outcome: ScenarioOutcome) -> dict:
    document = asdict(outcome)
    document["guarded"] = outcome.guarded
    analysis = outcome.analysis
    document["analysis"] = None if analysis is None else {
        "verdict": analysis.get("verdict"), "report": analysis.get("report"), "error": analysis.get("error"),
    }  # fmt: skip
    document["report"] = str(Path(outcome.run_dir) / "report" / "scenario.md")
    return document


def write_report(outcome: ScenarioOutcome, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "scenario.md").write_text(render_markdown(outcome))
    (out / "scenario.json").write_text(json.dumps(to_json(outcome), indent=2, default=str) + "\n")
    html = out / "report.html"
    section = render_html_section(outcome)
    if html.exists():
        text = html.read_text()
        marker = "<h2>Final read</h2>"
        text = text.replace(marker, section + "\n" + marker, 1) if marker in text else text + section
        html.write_text(text)
    else:
        html.write_text(f"<!doctype html><html><head><meta charset='utf-8'></head><body>{section}</body></html>\n")


__all__ = ["ClusterError", "ScenarioError", "run_scenario", "to_json", "write_report"]
