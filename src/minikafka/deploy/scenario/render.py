"""RUN/report/scenario.md and the scenario's section of report.html: each step, what the protocol should do, what
it did, the decisive events quoted from the run's logs, and the verdict."""

from __future__ import annotations

import html

from minikafka.deploy.analysis.kraft_summary import kraft_lines
from minikafka.deploy.scenario.model import CHECK, PROMISE, ScenarioOutcome, StepRecord

MARKS = {True: "as expected", False: "NOT as expected"}
SHOWN_ROWS = 3


def _kind(step: StepRecord) -> str:
    return {CHECK: " (check)", PROMISE: " (the protocol's promise)"}.get(step.kind, "")


def _configuration(outcome: ScenarioOutcome) -> str:
    others = {k: v for k, v in outcome.overrides.items() if k != outcome.guard.key}
    extra = f"; also {', '.join(f'{k}={v}' for k, v in others.items())}" if others else ""
    return f"`{outcome.guard.key}={outcome.guard_value}` ({outcome.guard.mode(outcome.guard_value)}){extra}"


def _analysis_lines(analysis: dict | None) -> list[str]:
    if analysis is None:
        return ["not run"]
    if "error" in analysis:
        return [f"failed: {analysis['error']}"]
    lines = [f"verdict **{analysis['verdict']}**; report: `{analysis.get('report', '')}`", ""]
    for v in analysis.get("invariants", []):
        if v["verdict"] == "pass":
            continue
        of = f" of {v['checked']}" if v.get("checked") is not None else ""
        lines.append(f"- {v['name']}: **{v['verdict']}**, {v['violations']}{of} ({v['description']})")
        lines += [f"  - `{row}`" for row in v.get("offending_rows", [])[:SHOWN_ROWS]]
    if len(lines) == 2:
        lines.append("- every invariant passed")
    return lines + [f"- controller quorum: {line}" for line in kraft_lines(analysis)]


def render_markdown(outcome: ScenarioOutcome) -> str:
    guard = outcome.guard
    lines = [
        f"# Scenario {outcome.name}: {outcome.title}",
        "",
        f"Configuration: {_configuration(outcome)}. With the guard: {guard.protects}. Without it: {guard.without}.",
        "",
        f"Run directory: `{outcome.run_dir}`; wall time {outcome.seconds:.0f} s (of which analyze "
        f"{outcome.analysis_seconds:.0f} s).",
        "",
        "## Verdict",
        "",
        f"**{outcome.verdict.line}**",
        "",
        f"Exit status {outcome.verdict.exit_code}: the promise {'held' if outcome.verdict.held else 'was broken'}, "
        f"{'as' if outcome.verdict.as_predicted else 'NOT as'} the scenario predicts for this configuration.",
        "",
        "## Steps",
        "",
    ]
    for step in outcome.steps:
        lines += [
            f"### {step.index}. {step.action}{_kind(step)}",
            "",
            f"- expected: {step.expected}",
            f"- observed: {step.observed} ({MARKS[step.ok]})",
        ]
        for evidence in step.evidence:
            lines += [f"- evidence: {evidence.sentence}", "", f"  ```json\n  {evidence.line}\n  ```"]
        lines.append("")
    if outcome.error:
        lines += [f"The scenario stopped here: {outcome.error}", ""]
    lines += [
        "## Acknowledged writes",
        "",
        "| topic | acks | acknowledged | lost | lost offsets |",
        "|---|---|---|---|---|",
    ]
    for t in outcome.tallies:
        span = f"{t.first_lost}..{t.last_lost}" if t.lost else ""
        lines.append(f"| {t.topic} | {t.acks} | {t.acknowledged} | {t.lost} | {span} |")
    lines += ["", "## Analysis (`minikafka analyze`)", "", *_analysis_lines(outcome.analysis), ""]
    return "\n".join(lines)


def render_html_section(outcome: ScenarioOutcome) -> str:
    """A section for report.html (inserted before its end)."""
    e = html.escape
    css = "pass" if outcome.verdict.exit_code == 0 else "fail"
    rows = []
    for step in outcome.steps:
        quoted = "".join(f"<br><small>{e(ev.sentence)}</small>" for ev in step.evidence)
        rows.append(
            f"<tr class='{'pass' if step.ok else 'fail'}'><td>{step.index}</td><td>{e(step.action + _kind(step))}</td>"
            f"<td>{e(step.expected)}</td><td>{e(step.observed)}{quoted}</td></tr>"
        )
    return "\n".join([
        f"<h2 id='scenario'>Scenario {e(outcome.name)}: {e(outcome.title)}</h2>",
        f"<p class='{css}'><b>{e(outcome.verdict.line)}</b></p>",
        f"<p>{e(_configuration(outcome).replace('`', ''))}</p>",
        "<table><tr><th>#</th><th>step</th><th>the protocol should</th><th>it did</th></tr>",
        *rows,
        "</table>",
        *([f"<p>The scenario stopped here: {e(outcome.error)}</p>"] if outcome.error else []),
    ])  # fmt: skip
