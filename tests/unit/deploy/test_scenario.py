"""The scenario step language, verdict and report without processes: events quoted from a run's logs, the verdict's
exit codes for each configuration, the rendered scenario.md, loading scenario modules, the CLI's one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from minikafka.deploy.scenario.events import find_events, query, quote
from minikafka.deploy.scenario.model import (
    CHECK,
    PROMISE,
    Evidence,
    Guard,
    ScenarioOutcome,
    StepRecord,
    Tally,
)
from minikafka.deploy.scenario.registry import ScenarioError, builtin, load
from minikafka.deploy.scenario.render import render_html_section, render_markdown
from minikafka.deploy.scenario.runner import write_report
from minikafka.deploy.scenario.verdict import explained_losses, judge

GUARD = Guard("alter.partition.broker.epoch.check", "true", "false", "nothing acknowledged is lost", "writes are lost")
REJECTED = {
    "ts": "2026-01-01T00:00:02.000000Z",
    "node": "controller-101",
    "event": "alter_partition_rejected",
    "error": "INELIGIBLE_REPLICA",
    "topic": "kip903",
    "partition": 0,
    "ineligible_replicas": [
        {"broker_id": 2, "reason": "stale_broker_epoch", "requested_broker_epoch": 12, "current_broker_epoch": 31}
    ],
}


def step(index: int, ok: bool = True, kind: str = "step") -> StepRecord:
    return StepRecord(index, f"action {index}", f"expected {index}", f"observed {index}", ok, (), kind)


def test_the_rejection_is_quoted_with_both_broker_epochs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    earlier = {**REJECTED, "ts": "2026-01-01T00:00:00.000000Z"}
    (logs / "controller-101.jsonl").write_text(
        "\n".join([json.dumps(earlier), "{not json", json.dumps(REJECTED)]) + "\n"
    )
    (logs / "broker-1.jsonl").write_text(json.dumps({**REJECTED, "node": "broker-1"}) + "\n")
    found = find_events(
        tmp_path, query("alter_partition_rejected", "controller", "2026-01-01T00:00:01", topic="kip903")
    )
    assert [(source, event["ts"]) for source, event in found] == [("controller-101", REJECTED["ts"])]
    evidence = quote(*found[0])
    assert "answered INELIGIBLE_REPLICA" in evidence.sentence
    assert "requested broker epoch 12 vs registered 31" in evidence.sentence
    assert json.loads(evidence.line) == REJECTED


@pytest.mark.parametrize(
    ("value", "lost", "steps", "error", "analysis", "held", "predicted", "code"),
    [
        ("true", 0, [step(1)], None, "pass", True, True, 0),
        ("false", 5, [step(1)], None, "fail", False, True, 1),  # the loss the scenario exists to show
        ("false", 0, [step(1)], None, "pass", True, False, 1),  # the failure did not show
        ("true", 5, [step(1)], None, "fail", False, False, 1),  # the guard did not protect: a real failure
        ("true", 0, [step(1), step(2, False, CHECK)], None, "pass", True, False, 1),
        ("true", 0, [step(1, False, PROMISE)], None, "pass", False, False, 1),
        ("true", 0, [step(1)], "step 2 (wait): not within its deadline of 30 s", None, False, False, 1),
        ("true", 0, [step(1)], None, "incomplete", False, False, 1),
    ],
)
def test_the_verdict_for_each_configuration(
    value: str, lost: int, steps: list, error: str | None, analysis: str | None, held: bool, predicted: bool, code: int
) -> None:
    verdict = judge("kip-903", GUARD, value, steps, [Tally("kip903", "all", 10, lost)], error, analysis)
    assert (verdict.held, verdict.as_predicted, verdict.exit_code) == (held, predicted, code)
    assert verdict.line.startswith(f"kip-903 (alter.partition.broker.epoch.check={value}, ")
    assert "\n" not in verdict.line
    if error:
        assert "ERROR: step 2" in verdict.line
    elif lost:
        assert f"10 acknowledged, {lost} lost" in verdict.line


def test_a_loss_analyze_passes_says_why() -> None:
    """An unguarded unclean election loses writes and analyze passes: the line says the loss is the expected one."""
    summary = {"verdict": "pass", "invariants": [
        {"name": "NoCommittedRecordLost", "verdict": "pass", "violations": 0},
        {"name": "UncleanElectionLoss", "verdict": "anomaly", "violations": 40},
        {"name": "LostAcksOneWrites", "verdict": "pass", "violations": 0},
    ]}  # fmt: skip
    assert explained_losses(summary) == {"UncleanElectionLoss": 40}
    tallies = [Tally("unclean-0", "all", 100, 40)]
    verdict = judge("unclean-election", GUARD, "false", [step(1)], tallies, None, "pass", explained_losses(summary))
    assert "40 lost; analyze: pass: the loss is the expected one here, a warning and not a failure: 40 " in verdict.line
    assert verdict.line.endswith("discarded by the unclean election, the cost of that choice (UncleanElectionLoss))")
    unexplained = judge("unclean-election", GUARD, "false", [step(1)], tallies, None, "pass", {})
    assert "analyze: pass (analyze checks the run's histories itself" in unexplained.line
    assert "analyze: fail)" in judge("x", GUARD, "false", [step(1)], tallies, None, "fail", {}).line


def outcome(tmp_path: Path, value: str, lost: int) -> ScenarioOutcome:
    evidence = quote("controller-101", REJECTED)
    steps = (
        StepRecord(1, "release broker-1's held AlterPartition", "the stale request arrives", "sent", True),
        StepRecord(2, "wait for alter_partition_rejected", "INELIGIBLE_REPLICA", evidence.sentence, True, (evidence,)),
        StepRecord(3, "who leads", "nobody", "leader 2", False, (Evidence("client", "leader 2"),), CHECK),
    )
    tallies = (Tally("kip903", "all", 3000, lost, 2000 if lost else None, 2999 if lost else None),)
    analysis = {"verdict": "fail", "report": "r.html", "invariants": [
        {"name": "NoCommittedRecordLost", "verdict": "fail", "violations": lost, "checked": 3000,
         "description": "every acks=all acknowledged record is there", "offending_rows": [{"offset": 2000}]},
    ]}  # fmt: skip
    verdict = judge("kip-903", GUARD, value, steps, tallies, None, analysis["verdict"])
    return ScenarioOutcome(
        "kip-903", "the title", GUARD, value, {GUARD.key: value, "x.y": "1"}, str(tmp_path), steps, tallies, None,
        analysis, 42.0, verdict,
    )  # fmt: skip


def test_scenario_md_tells_each_step_with_its_evidence_and_the_verdict(tmp_path: Path) -> None:
    text = render_markdown(outcome(tmp_path, "false", 1000))
    assert text.startswith("# Scenario kip-903: the title\n")
    assert "`alter.partition.broker.epoch.check=false` (unguarded); also x.y=1" in text
    # A check missed: the run broke, but not as the scenario predicts, so the verdict does not claim it did.
    assert (
        "**kip-903 (alter.partition.broker.epoch.check=false, unguarded): BROKEN (3000 acknowledged, 1000 lost; "
        "analyze: fail; not as predicted: who leads)**" in text
    )
    assert "### 2. wait for alter_partition_rejected\n" in text
    assert "- evidence: controller-101 at 2026-01-01T00:00:02.000000Z: AlterPartition for kip903-0 answered " in text
    assert '"requested_broker_epoch":12' in text
    assert "### 3. who leads (check)" in text and "(NOT as expected)" in text
    assert "| kip903 | all | 3000 | 1000 | 2000..2999 |" in text
    assert "- NoCommittedRecordLost: **fail**, 1000 of 3000" in text
    assert "Exit status 1" in text


def test_the_report_gains_a_scenario_section(tmp_path: Path) -> None:
    report = tmp_path / "report"
    report.mkdir()
    (report / "report.html").write_text("<html><body><h1>x</h1>\n<h2>Final read</h2><p>y</p></body></html>")
    done = outcome(tmp_path, "true", 0)
    write_report(done, report)
    html = (report / "report.html").read_text()
    assert html.index("<h2 id='scenario'>Scenario kip-903") < html.index("<h2>Final read</h2>")
    assert "requested broker epoch 12 vs registered 31" in render_html_section(done)
    assert (report / "scenario.md").read_text() == render_markdown(done)
    assert json.loads((report / "scenario.json").read_text())["verdict"]["exit_code"] == done.verdict.exit_code


def test_builtin_scenarios_load_and_user_files_are_checked(tmp_path: Path) -> None:
    names = {s.name for s in builtin()}
    assert {"kip-903", "last-replica-standing", "unclean-election", "zombie-leader", "controlled-shutdown"} <= names
    assert "disruptive-controller" in names
    assert "controller-disk-loss" in names
    assert load("controller-disk-loss").topology.dynamic_quorum
    assert load("hanging-transaction").guard.key == "transaction.partition.verification.enable"
    assert load("stolen-producer-id").guard.key == "minikafka.produce.idempotent.write.check.enable"
    assert load("kip-903").guard.key == "alter.partition.broker.epoch.check"
    with pytest.raises(ScenarioError, match="no scenario named 'nope'"):
        load("nope")
    incomplete = tmp_path / "mine.py"
    incomplete.write_text("NAME = 'mine'\n")
    with pytest.raises(ScenarioError, match="needs TITLE"):
        load(str(incomplete))
    broken = tmp_path / "broken.py"
    broken.write_text("import nothing_of_that_name\n")
    with pytest.raises(ScenarioError, match="cannot load it: ModuleNotFoundError"):
        load(str(broken))
    mine = tmp_path / "ok.py"
    mine.write_text(
        "from minikafka.deploy.scenario import Guard, Topology\n"
        "NAME, TITLE = 'ok', 'a user scenario'\n"
        "GUARD = Guard('unclean.leader.election.enable', 'false', 'true', 'p', 'w')\n"
        "TOPOLOGY = Topology(brokers=1)\n"
        "def run(s):\n    pass\n"
    )
    assert load(str(mine)).name == "ok"


def minikafka(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "minikafka.launcher", *args], capture_output=True, text=True, check=False
    )


def test_scenario_cli_lists_and_refuses_bad_input_in_one_line(tmp_path: Path) -> None:
    listed = minikafka("scenario", "list", "--json")
    assert listed.returncode == 0
    assert "kip-903" in {s["name"] for s in json.loads(listed.stdout)}
    cases = {
        ("run", "nope"): "no scenario named 'nope'",
        ("run", str(tmp_path / "missing.py")): "no such scenario file",
        ("run", "zombie-leader", "--set", "acks=2", "--no-analysis"): "acks is all (guarded) or 1 (unguarded)",
        ("run", "kip-903", "--set", "no.such.key=1", "--no-analysis", "--dir", str(tmp_path / "r")): "unknown config",
    }
    for args, message in cases.items():
        outcome = minikafka("scenario", *args)
        assert outcome.returncode == 1, (args, outcome.stderr)
        assert outcome.stderr.count("\n") == 1 and message in outcome.stderr, (args, outcome.stderr)


def test_demo_prints_both_verdicts_side_by_side(tmp_path: Path) -> None:
    from dataclasses import replace

    from minikafka.deploy.demo import side_by_side

    forked = quote("controller-101", REJECTED)
    guarded = outcome(tmp_path, "true", 0)
    guarded = replace(guarded, steps=(replace(guarded.steps[1], guard_dependent=True, evidence=(forked,)),))
    unguarded = outcome(tmp_path, "false", 1000)
    assert guarded.decisive == forked and unguarded.decisive is None
    lines = side_by_side([guarded, unguarded])
    assert lines[0] == "scenario kip-903: the title"
    assert lines[1].split() == ["guard:", f"{GUARD.key}=true", f"{GUARD.key}=false"]
    assert "3000 acknowledged, 0 lost" in lines[3] and lines[3].endswith("3000 acknowledged, 1000 lost")
    decisive = [line for line in lines if "decisive event:" in line][0]
    assert "AlterPartition for kip903-0" in decisive and decisive.endswith(" -")
    assert "requested broker epoch 12 vs registered 31" in " ".join(" ".join(line.split()) for line in lines)
    assert all(len(line) <= 2 + 16 + 2 * 60 for line in lines if "report:" not in line)
    reports = [line.split() for line in lines if "report:" in line]  # one path a line, never two run together
    assert [r[1] for r in reports] == [str(Path(o.run_dir) / "report" / "scenario.md") for o in (guarded, unguarded)]
    assert [r[2] for r in reports] == [f"({GUARD.key}=true)", f"({GUARD.key}=false)"]
