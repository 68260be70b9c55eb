"""run_all's guards (benchmarks/run_all_guards.py) on results as run_all writes them: a floor below its line is
broken, a target not reached is said so, a figure not measured is neither, and the scale curve's points are held to
no fencing, full ISRs and idle CPU under 10% of a core."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # the benchmarks are scripts, not a package

from run_all_guards import evaluate  # noqa: E402 - found on the path added above


def verdicts(results: dict[str, Any]) -> dict[tuple[str, str], bool | None]:
    return {(row["guard"], row["kind"]): row["held"] for row in evaluate(results)}


def produce(acks1: float, acks_all: float) -> dict[str, Any]:
    return {
        "produce": {
            "p1_inflight1_acks1": {"unary_echo_ratio": acks1},
            "p1_inflight1_acksall": {"unary_echo_ratio": acks_all},
        }
    }


def test_a_ratio_below_its_floor_is_broken_and_between_floor_and_target_only_short_of_the_target() -> None:
    found = verdicts(produce(acks1=0.49, acks_all=0.28))
    assert found[("gRPC acks=1, 1 in flight, vs unary echo", "floor")] is True
    assert found[("gRPC acks=1, 1 in flight, vs unary echo", "target")] is False
    assert found[("gRPC acks=all, 1 in flight, vs unary echo", "floor")] is False


def test_a_figure_not_measured_is_neither_held_nor_broken() -> None:
    found = verdicts(produce(acks1=0.6, acks_all=0.4))
    assert found[("Kafka wire, confluent-kafka, 1 partition, vs Tansu", "target")] is None
    assert found[("failover p50 ms, within the session timeout + 500 ms", "floor")] is None
    assert found[("acks=all p50 ms at 500 records/s", "target")] is None


def test_a_line_taken_from_the_runs_own_baseline() -> None:
    results = {"failover": {"p50_ms": 2900, "session_timeout_ms": 3000}, "raft": {"commits_per_s": 900.0},
               "pysyncobj": {"commits_per_s": 1000.0}}  # fmt: skip
    found = verdicts(results)
    assert found[("failover p50 ms, within the session timeout + 500 ms", "floor")] is True
    assert found[("KRaft alone vs pysyncobj, 64 in flight", "floor")] is False


def test_the_stored_scale_curve_holds_its_floors_and_shows_the_20000_restart_short() -> None:
    curve = {
        str(n): json.loads((BENCHMARKS / "partition_scale_runs" / f"scale-{n}.json").read_text())
        for n in (10000, 20000)
    }
    rows = [row for row in evaluate({"partition_scale": curve}) if row["guard"].startswith("scale ")]
    assert all(row["held"] for row in rows if row["kind"] == "floor"), rows
    restarts = {row["guard"].split(":")[0]: row["held"] for row in rows if "restart" in row["guard"]}
    assert restarts == {"scale 10000": True, "scale 20000": False}
    json.dumps(rows, allow_nan=False)  # results.json stays standard JSON
