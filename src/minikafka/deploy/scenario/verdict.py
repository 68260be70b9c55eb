"""The scenario's verdict, from its steps, its final reads and analyze's summary (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minikafka.deploy.scenario.model import CHECK, PROMISE, Guard, ScenarioVerdict, StepRecord, Tally

EXIT_AS_PROMISED, EXIT_NOT_AS_PROMISED = 0, 1


def judge(
    name: str,
    guard: Guard,
    guard_value: str,
    steps: Sequence[StepRecord],
    tallies: Sequence[Tally],
    error: str | None,
    analysis_verdict: str | None,
    explained: Mapping[str, int] | None = None,
) -> ScenarioVerdict:
    """Held: every step ran, no acknowledged write (of any acks) is missing from the final read, every promise
    step held and analyze passed. As predicted: held with the guard on, not held without it, and every check met.
    Exit 0 only for a run that held as predicted: a guarded run that kept the promise. `explained`: the losses
    analyze counted as warnings, by check (explained_losses), so a pass beside a loss says why."""
    guarded = guard_value == guard.on
    acknowledged = sum(t.acknowledged for t in tallies)
    lost = sum(t.lost for t in tallies)
    broken = [s for s in steps if s.kind == PROMISE and not s.ok]
    missed = [s for s in steps if s.kind == CHECK and not s.ok]
    analysis_ok = analysis_verdict in (None, "pass")
    held = error is None and lost == 0 and not broken and analysis_ok
    as_predicted = error is None and held == guarded and not missed
    config = f"{guard.key}={guard_value}, {guard.mode(guard_value)}"
    if error is not None:
        return ScenarioVerdict(False, False, EXIT_NOT_AS_PROMISED, f"{name} ({config}): ERROR: {error}")
    facts = [f"{acknowledged} acknowledged, {lost} lost"]
    facts += [f"promise broken: {s.action}" for s in broken]
    if analysis_verdict is not None:
        facts.append(f"analyze: {analysis_verdict}{_why_a_loss_passes(lost, analysis_verdict, explained or {})}")
    facts += [f"not as predicted: {s.action}" for s in missed]
    if held:
        outcome = "HELD" if guarded else "HELD, the failure did not show this time"
    else:
        outcome = f"BROKEN: {guard.without}" if guarded is False and as_predicted else "BROKEN"
    exit_code = EXIT_AS_PROMISED if held and as_predicted else EXIT_NOT_AS_PROMISED
    return ScenarioVerdict(held, as_predicted, exit_code, f"{name} ({config}): {outcome} ({'; '.join(facts)})")


# The losses analyze reports as warnings rather than failures, and what each one is.
EXPLAINED_LOSSES = {
    "UncleanElectionLoss": "discarded by the unclean election, the cost of that choice",
    "LostAcksOneWrites": "acks=1 writes lost with their leader, which acks=1 allows",
}


def explained_losses(analysis: Mapping[str, Any] | None) -> dict[str, int]:
    """From analyze's summary: the records each explained-loss warning counted (only those with any)."""
    invariants = (analysis or {}).get("invariants") or []
    return {v["name"]: v["violations"] for v in invariants if v.get("name") in EXPLAINED_LOSSES and v["violations"]}


def _why_a_loss_passes(lost: int, analysis_verdict: str, explained: Mapping[str, int]) -> str:
    if lost == 0 or analysis_verdict != "pass":
        return ""
    if not explained:
        return " (analyze checks the run's histories itself and counted none of this loss as a failure: see its report)"
    reasons = ", ".join(f"{count} {EXPLAINED_LOSSES[name]} ({name})" for name, count in explained.items())
    return f": the loss is the expected one here, a warning and not a failure: {reasons}"
