"""The partition scale curve: each figure of `partition_scale.py --faults` runs against the partitions created.

    .venv/bin/python benchmarks/plot_partition_scale.py RUN.json [RUN.json ...] [--png docs/partition-scale.png]

Each RUN.json is one run's output (`partition_scale.py --out`), one point of the curve. Draws one panel a measure
(seconds until every ISR is full and every broker took its replicas on; committed fencings while creating; each
broker's idle CPU and RSS; the controller failover; broker 1's stop and its restart until every ISR is full again;
a describe of every topic; the machine's load average) to the PNG, and prints the same figures as a Markdown table.
A figure the run did not reach within its bound is drawn as a cross at the panel's top and written "not reached".
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen

Point = dict[str, Any]


class Series(NamedTuple):
    label: str
    value: Callable[[Point], float | None]


class Panel(NamedTuple):
    title: str
    unit: str
    series: tuple[Series, ...]


def fencings(point: Point) -> float:
    """Committed fencings until the idle window ended (before the faults): each controller replays every one."""
    controllers = [counts for node, counts in point.get("events", {}).items() if node.startswith("controller")]
    return float(max((counts.get("broker_fenced", 0) for counts in controllers), default=0))


def session_expiries(point: Point, key: str = "events") -> float | None:
    """Sessions expired (each logged by the active controller of the time), until the idle window ended (`events`)
    or until after the faults (`events_after_faults`, None without them): a broker stopped without the
    controller's grant shows here."""
    if key not in point:
        return None
    controllers = [counts for node, counts in point[key].items() if node.startswith("controller")]
    return float(sum(counts.get("broker_session_expired", 0) for counts in controllers))


def brokers(point: Point, key: str, pick: Callable[[list[float]], float]) -> float | None:
    values = [u[key] for node, u in (point.get("idle") or {}).items() if node.startswith("broker") and u]
    return pick(values) if values else None


def field(name: str) -> Callable[[Point], float | None]:
    return lambda point: point.get(name)


def load(index: int) -> Callable[[Point], float | None]:
    """The 1-minute load average at the run's start (index 0 of load_average_start) or end."""
    return lambda point: round(point["load_average_start" if index == 0 else "load_average_end"][0], 1)


PANELS = (
    Panel(
        "After CreateTopics",
        "s",
        (Series("every ISR full", field("isrs_full_s")), Series("every replica taken on", field("replicas_applied_s"))),
    ),
    Panel(
        "Brokers fenced (goal: 0 while creating)",
        "count",
        (
            Series("fencings committed", fencings),
            Series("session expiries", session_expiries),
            Series("session expiries, faults included", lambda p: session_expiries(p, "events_after_faults")),
        ),
    ),
    Panel(
        "Broker idle CPU (30 s window)",
        "% of a core",
        (
            Series("highest broker", lambda p: brokers(p, "idle_cpu_percent", max)),
            Series("lowest broker", lambda p: brokers(p, "idle_cpu_percent", min)),
        ),
    ),
    Panel("Broker RSS, settled", "MiB", (Series("highest broker", lambda p: brokers(p, "rss_mib", max)),)),
    Panel("Controller failover", "s", (Series("SIGKILL to a committed CreateTopics", field("controller_failover_s")),)),
    Panel(
        "Broker 1 stopped and restarted",
        "s",
        (
            Series("clean stop", field("broker_stop_s")),
            Series("restart: replicas taken on", field("broker_restart_replicas_taken_s")),
            Series("restart: every ISR full", field("broker_restart_isrs_full_s")),
        ),
    ),
    Panel("topics describe, every topic", "s", (Series("one describe", field("describe_s")),)),
    Panel("Machine load (2 cores, shared)", "1-min load average", (Series("start", load(0)), Series("end", load(1)))),
)


def draw(points: list[Point], png: Path) -> None:
    figure, axes = plt.subplots(2, 4, figsize=(17, 8), constrained_layout=True)
    sizes = [point["partitions"] for point in points]
    for panel, ax in zip(PANELS, axes.flat, strict=True):
        top = 0.0
        for series in panel.series:
            values = [series.value(point) for point in points]
            reached = [(n, v) for n, v in zip(sizes, values, strict=True) if v is not None]
            top = max([top, *(v for _, v in reached)])
            ax.plot([n for n, _ in reached], [v for _, v in reached], marker="o", label=series.label)
            missing = [n for n, v in zip(sizes, values, strict=True) if v is None]
            if missing:
                ax.plot(
                    missing, [top * 1.1 or 1.0] * len(missing), "x", color="red", label=f"{series.label}: not reached"
                )
        ax.set_title(panel.title)
        ax.set_xlabel("partitions created (+ 1,000 warm-up), RF 3, 3+3 nodes")
        ax.set_ylabel(panel.unit)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    figure.suptitle("minikafka at thousands of partitions: one run a point, on a shared 2-core machine")
    figure.savefig(png, dpi=80)


def cell(value: float | None) -> str:
    return "not reached" if value is None else f"{value:g}"


def table(points: list[Point]) -> str:
    header = "| | " + " | ".join(f"{point['partitions']:,}" for point in points) + " |"
    rows = [header, "|---|" + "---|" * len(points)]
    for panel in PANELS:
        for series in panel.series:
            label = f"{panel.title}: {series.label} ({panel.unit})"
            rows.append(f"| {label} | " + " | ".join(cell(series.value(p)) for p in points) + " |")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="partition_scale.py --out files, one a point")
    parser.add_argument("--png", type=Path, default=Path(__file__).resolve().parent.parent / "docs/partition-scale.png")
    args = parser.parse_args()
    points = sorted((json.loads(path.read_text()) for path in args.runs), key=lambda point: point["partitions"])
    draw(points, args.png)
    print(table(points))


if __name__ == "__main__":
    main()
