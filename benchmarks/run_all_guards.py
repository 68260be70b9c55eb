"""The lines `run_all` holds its figures to, each checked on the run's own results and written beside them in
results.json, so a regression beyond a line shows in the file as well as in the printed table.

A floor is a line the code once held and must not fall below again (a regression guard); a target is a goal not
yet reached, kept in view. Every figure is a ratio against a baseline measured in the same run, or a time, so the
lines stay meaningful on a shared machine; a figure the run did not measure is listed as not measured."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

IDLE_CPU_PERCENT = 10.0  # a broker's idle CPU at any point of the scale curve, % of a core


@dataclass(frozen=True)
class Guard:
    name: str
    path: tuple[str, ...]  # keys into results.json
    line: float | Callable[[dict[str, Any]], float]
    at_least: bool  # the figure must be at or above the line (else at or below)
    kind: str  # "floor" or "target"


GUARDS = (
    Guard("gRPC acks=1, 1 in flight, vs unary echo", ("produce", "p1_inflight1_acks1", "unary_echo_ratio"),
          0.45, True, "floor"),
    Guard("gRPC acks=1, 1 in flight, vs unary echo", ("produce", "p1_inflight1_acks1", "unary_echo_ratio"),
          0.52, True, "target"),
    Guard("gRPC acks=all, 1 in flight, vs unary echo", ("produce", "p1_inflight1_acksall", "unary_echo_ratio"),
          0.30, True, "floor"),
    Guard("gRPC acks=all, 1 in flight, vs unary echo", ("produce", "p1_inflight1_acksall", "unary_echo_ratio"),
          0.35, True, "target"),
    Guard("acks=all p99 ms at 500 records/s", ("produce_moderate", "p99_ms"), 20.0, False, "floor"),
    Guard("acks=all p50 ms at 500 records/s", ("produce_moderate", "p50_ms"), 0.8, False, "target"),
    Guard("acks=all p99 ms at 500 records/s", ("produce_moderate", "p99_ms"), 3.0, False, "target"),
    Guard("failover p50 ms, within the session timeout + 500 ms", ("failover", "p50_ms"),
          lambda results: float(results["failover"]["session_timeout_ms"]) + 500, False, "floor"),
    Guard("KRaft alone vs pysyncobj, 64 in flight", ("raft", "commits_per_s"),
          lambda results: float(results["pysyncobj"]["commits_per_s"]), True, "floor"),
    Guard("Kafka wire, confluent-kafka, 1 partition, vs Tansu", ("kafka_wire", "confluent_p1", "ratio_to_tansu"),
          0.80, True, "target"),
    Guard("Kafka wire, confluent-kafka, 6 partitions, vs Tansu", ("kafka_wire", "confluent_p6", "ratio_to_tansu"),
          0.80, True, "target"),
    Guard("Kafka wire, aiokafka, 1 partition, vs Tansu", ("kafka_wire", "aiokafka_p1", "ratio_to_tansu"),
          0.40, True, "target"),
    Guard("Kafka wire, aiokafka, 6 partitions, vs Tansu", ("kafka_wire", "aiokafka_p6", "ratio_to_tansu"),
          0.40, True, "target"),
    Guard("simulator per core vs a real chaos run's wall time", ("simulator", "per_core_ratio"), 10.0, True,
          "floor"),
    Guard("simulator per core vs a real chaos run's wall time", ("simulator", "per_core_ratio"), 50.0, True,
          "target"),
)  # fmt: skip


def _find(results: dict[str, Any], path: tuple[str, ...]) -> Any:
    found: Any = results
    for key in path:
        if not isinstance(found, dict) or key not in found:
            return None
        found = found[key]
    return found


def _row(name: str, kind: str, value: float | None, line: float | None, at_least: bool) -> dict[str, Any]:
    """`line` None: the figure holds by being measured at all (reached within the run's bound)."""
    if line is None:
        held: bool | None = value is not None
    else:
        held = None if value is None else (value >= line if at_least else value <= line)
    return {"guard": name, "kind": kind, "value": value, "line": line, "at_least": at_least, "held": held}


def _scale_rows(curve: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Per point of the scale curve: no broker fenced, every ISR full, each broker's idle CPU under the line, and
    (with the faults) a restarted broker back in every ISR within the run's bound."""
    for partitions, point in curve.items():
        controllers = [e for node, e in point["events"].items() if node.startswith("controller")]
        fencings = max((e.get("broker_fenced", 0) for e in controllers), default=0)
        yield _row(f"scale {partitions}: broker fencings", "floor", fencings, 0, False)
        yield _row(f"scale {partitions}: every ISR full after CreateTopics, s", "floor", point.get("isrs_full_s"),
                   None, False)  # fmt: skip
        idle = [u["idle_cpu_percent"] for node, u in point["idle"].items() if node.startswith("broker") and u]
        yield _row(f"scale {partitions}: highest broker idle CPU %", "floor", max(idle, default=None),
                   IDLE_CPU_PERCENT, False)  # fmt: skip
        if "restarted_broker" in point:
            yield _row(f"scale {partitions}: a broker's restart until every ISR is full, s", "target",
                       point.get("broker_restart_isrs_full_s"), None, False)  # fmt: skip


def evaluate(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every guard against `results`: its figure, its line and whether it held (None: not measured)."""
    rows = []
    for guard in GUARDS:
        value = _find(results, guard.path)
        try:
            line = guard.line(results) if callable(guard.line) else guard.line
        except (KeyError, TypeError):
            line, value = None, None  # its baseline was not measured
        row = _row(guard.name, guard.kind, None if value is None else float(value), line, guard.at_least)
        rows.append(row if line is not None else {**row, "held": None})
    rows.extend(_scale_rows(results.get("partition_scale", {})))
    return rows


def print_guards(rows: list[dict[str, Any]]) -> None:
    print(f"{'guard':<62}{'kind':>8}{'value':>12}{'line':>12}  verdict")
    for row in rows:
        verdict = {True: "held", False: "BROKEN" if row["kind"] == "floor" else "not reached", None: "not measured"}
        value = "" if row["value"] is None else f"{row['value']:.3g}"
        sign = ">=" if row["at_least"] else "<="
        line = "" if row["line"] is None else f"{sign} {row['line']:.3g}"
        print(f"{row['guard']:<62}{row['kind']:>8}{value:>12}{line:>12}  {verdict[row['held']]}")
