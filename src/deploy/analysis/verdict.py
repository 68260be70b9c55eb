"""An invariant's verdict: its name (TLA+/Jepsen names), pass or fail, and the offending rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame

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


def verdict_from(
    name: str, description: str, offending: DataFrame, severity: str = "invariant", checked: int | None = None
) -> Verdict:
    """Collect a few offending rows (and count them all) into a verdict."""
    violations = offending.count()
    rows = [row.asDict(recursive=True) for row in offending.limit(MAX_ROWS_SHOWN).collect()] if violations else []
    for row in rows:
        for key, value in row.items():
            if hasattr(value, "isoformat"):
                row[key] = value.isoformat()
    return Verdict(name, description, violations == 0, violations, rows, severity, checked)
