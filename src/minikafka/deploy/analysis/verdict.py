"""An invariant's verdict: its name (TLA+/Jepsen names), pass or fail, and the offending rows."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.deploy.analysis.concurrent_jobs import run_jobs

MAX_ROWS_SHOWN = 50


@dataclass(frozen=True)
class Verdict:
    name: str
    description: str
    passed: bool
    violations: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    severity: str = "invariant"  # "invariant" fails the run; "anomaly" is reported without failing it
    checked: int | None = None  # how many items were checked, where that is meaningful

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "verdict": "pass" if self.passed else ("fail" if self.severity == "invariant" else "warn"),
            "severity": self.severity,
            "violations": self.violations,
            "checked": self.checked,
            "offending_rows": self.rows,
        }


@dataclass(frozen=True)
class Check:
    """An invariant to decide: the DataFrame of its offending rows (empty when it holds)."""

    name: str
    description: str
    offending: DataFrame
    severity: str = "invariant"
    checked: int | None = None


def collect_verdicts(checks: list[Check]) -> list[Verdict]:
    """Decide every check, each in a Spark job of its own (one job over the union of all checks ran about twice as
    slowly: its plan repeats every shared subtree), the jobs run concurrently."""
    return run_jobs(_decide, checks)


def _decide(check: Check) -> Verdict:
    # Each row keeps its place in the check's order (an id that grows along an ordered DataFrame): sorting the JSON
    # strings instead would show offset 10 before offset 5, and the first rows shown would not be the first ones.
    ranked = F.struct(
        F.monotonically_increasing_id().alias("place"),
        F.to_json(F.struct(*check.offending.columns)).alias("row"),
    )
    found = (
        check.offending.select(ranked.alias("ranked"))
        .agg(
            F.count("*").alias("violations"),
            F.slice(F.sort_array(F.collect_list("ranked")), 1, MAX_ROWS_SHOWN).getField("row").alias("rows"),
        )
        .collect()[0]
    )
    return Verdict(
        check.name,
        check.description,
        found["violations"] == 0,
        found["violations"],
        [json.loads(row) for row in found["rows"] or []],
        check.severity,
        check.checked,
    )


def verdict_from(
    name: str, description: str, offending: DataFrame, severity: str = "invariant", checked: int | None = None
) -> Verdict:
    """One check's verdict (tests and single checks; the report decides all of them with `collect_verdicts`)."""
    return collect_verdicts([Check(name, description, offending, severity, checked)])[0]


# The run's verdict and `minikafka analyze`'s exit status for it. A failed invariant outranks everything; a run
# with no acknowledged write has nothing to check; records no final read reached leave the verdict incomplete.
PASS, FAIL, INCOMPLETE, NOTHING_TO_CHECK = "pass", "fail", "incomplete", "nothing to check"
EXIT_CODES = {PASS: 0, FAIL: 1, INCOMPLETE: 3, NOTHING_TO_CHECK: 4}


def run_verdict(verdicts: list[Verdict], acknowledged: int, unknown: int) -> str:
    if any(not v.passed and v.severity == "invariant" for v in verdicts):
        return FAIL
    if acknowledged == 0:
        return NOTHING_TO_CHECK
    return INCOMPLETE if unknown else PASS
