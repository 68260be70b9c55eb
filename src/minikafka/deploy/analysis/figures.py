"""PNG figures for the report (matplotlib, no display): timelines, failovers, latencies, throughput.

Each function takes rows already collected from the Spark jobs (lists of dicts) and writes one PNG; times are
shown in seconds since the start of the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 - the backend must be chosen first

Row = dict[str, Any]
STATE_COLOURS = {"registered": "#f2c14e", "unfenced": "#5aa469", "fenced": "#d1495b", "shutting_down": "#f4845f"}
LEADER_COLOUR, ISR_COLOUR, OUT_COLOUR = "#1d3557", "#8ecae6", "#eeeeee"
ELR_COLOUR = "#f4a261"  # out of the ISR but still a safe leader
CUT_COLOUR = "#e9c46a"  # a network cut, from cut to heal


def _seconds(ts: datetime, start: datetime) -> float:
    return (ts - start).total_seconds()


def _fault_lines(axes: Sequence[Any], faults: list[Row], start: datetime, label_axis: Any) -> None:
    """A dashed line per fault across every panel; faults within 1% of the run share one label."""
    xs = [_seconds(fault["ts"], start) for fault in faults]
    span = max(xs, default=0) - min(xs, default=0) or 1.0
    groups: list[tuple[float, list[str]]] = []
    for x, fault in zip(xs, faults, strict=True):
        for axis in axes:
            axis.axvline(x, color="#888888", linestyle="--", linewidth=0.8)
        label = f"{fault['fault']} {fault['target']}"
        if groups and x - groups[-1][0] < 0.01 * span:
            groups[-1][1].append(label)
        else:
            groups.append((x, [label]))
    for x, labels in groups:
        label_axis.annotate(
            ", ".join(labels),
            (x, 1.0),
            xycoords=("data", "axes fraction"),
            rotation=60,
            fontsize=7,
            va="bottom",
            ha="left",
        )


def _cut_spans(axes: Sequence[Any], cuts: Sequence[Row], end: float, start: datetime) -> None:
    """A network cut shades every panel from the cut to its heal (to the end when it never healed)."""
    for cut in cuts:
        begin = _seconds(cut["started"], start)
        finish = _seconds(cut["healed"], start) if cut["healed"] is not None else end
        for axis in axes:
            axis.axvspan(begin, max(finish, begin), color=CUT_COLOUR, alpha=0.25, linewidth=0)


INCIDENT_MARKS = {"storage": ("X", "#b00020"), "replica set": ("D", "#6a4c93"), "unclean election": ("*", "#e76f51")}


def _incident_marks(
    broker_axis: Any, partition_axes: dict[str, Any], incidents: Sequence[Row], start: datetime
) -> None:
    """Each incident on its partition's panel (at the top), else at its broker's row of the broker panel."""
    for incident in incidents:
        marker, colour = INCIDENT_MARKS.get(incident["kind"], ("o", "#444444"))
        x = _seconds(incident["ts"], start)
        label = incident["event"].replace("_", " ")
        axis = partition_axes.get(incident["tp"] or "")
        node = incident["node"] or ""
        if axis is not None:
            y = axis.get_ylim()[1]
        elif node.startswith("broker-"):
            axis, y = broker_axis, int(node.rsplit("-", 1)[1])
        else:
            axis, y = broker_axis, broker_axis.get_ylim()[1]
        axis.plot([x], [y], marker=marker, color=colour, markersize=7, clip_on=False)
        axis.annotate(label, (x, y), fontsize=6, color=colour, xytext=(3, 3), textcoords="offset points")


def _spans(changes: list[Row], end: float, start: datetime) -> list[tuple[float, float, Row]]:
    """(from, to, state) intervals for consecutive state rows."""
    spans = []
    for index, row in enumerate(changes):
        begin = _seconds(row["ts"], start)
        finish = _seconds(changes[index + 1]["ts"], start) if index + 1 < len(changes) else end
        spans.append((begin, max(finish, begin), row))
    return spans


def timeline_figure(
    path: Path,
    partitions: list[Row],
    brokers: list[Row],
    controllers: list[Row],
    faults: list[Row],
    start: datetime,
    end: datetime,
    cuts: Sequence[Row] = (),
    incidents: Sequence[Row] = (),
) -> Path:
    """Controller leader, broker states and each partition's leader/ISR/ELR per replica over the run; network cuts
    shaded from cut to heal, incidents (offline log dirs, corrupt batches, replica-set changes, unclean
    elections) marked where they happened."""
    by_tp: dict[str, list[Row]] = {}
    for row in partitions:
        by_tp.setdefault(row["tp"], []).append(row)
    total = _seconds(end, start)
    panels = 2 + len(by_tp)
    figure, grid = plt.subplots(panels, 1, figsize=(12, 1.6 + 1.3 * panels), sharex=True, squeeze=False)
    axes = [a[0] for a in grid]

    _controller_panel(axes[0], controllers, total, start)
    _broker_panel(axes[1], brokers, total, start)
    for axis, (tp, rows) in zip(axes[2:], sorted(by_tp.items()), strict=True):
        _partition_panel(axis, tp, rows, total, start)
    axes[2 if len(axes) > 2 else 1].legend(
        handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in (LEADER_COLOUR, ISR_COLOUR, ELR_COLOUR, OUT_COLOUR)],
        labels=["leader", "in ISR", "in ELR (KIP-966)", "out of ISR"],
        fontsize=6,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
    )
    _fault_lines(axes, faults, start, axes[0])
    _cut_spans(axes, cuts, total, start)
    _incident_marks(axes[1], dict(zip(sorted(by_tp), axes[2:], strict=True)), incidents, start)
    axes[-1].set_xlabel("seconds since the start of the run")
    axes[-1].set_xlim(0, max(total, 1))
    figure.tight_layout()
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


class EpochLabel(NamedTuple):
    x: float
    text: str


def epoch_labels(changes: Sequence[tuple[float, int]], total: float, prefix: str) -> list[EpochLabel]:
    """One label per epoch change, except that changes closer together than 6% of the run (where their labels
    would be drawn over each other) share one label naming the first and last epoch: `le3-le5`."""
    gap = 0.06 * max(total, 1.0)
    groups: list[list[tuple[float, int]]] = []
    for x, epoch in changes:
        if groups and x - groups[-1][0][0] < gap:
            groups[-1].append((x, epoch))
        else:
            groups.append([(x, epoch)])
    return [
        EpochLabel(group[0][0], f"{prefix}{group[0][1]}" + (f"-{prefix}{group[-1][1]}" if len(group) > 1 else ""))
        for group in groups
    ]


def _controller_panel(axis: Any, controllers: list[Row], total: float, start: datetime) -> None:
    changes: list[tuple[float, int]] = []
    for begin, finish, row in _spans(controllers, total, start):
        axis.broken_barh([(begin, finish - begin)], (row["leader"] - 0.4, 0.8), color=LEADER_COLOUR)
        if not changes or changes[-1][1] != row["epoch"]:
            changes.append((begin, row["epoch"]))
    top = max((r["leader"] for r in controllers if r["leader"] is not None), default=0)
    for label in epoch_labels(changes, total, "e"):
        axis.annotate(label.text, (label.x, top + 0.45), fontsize=6)
    axis.set_ylabel("KRaft\nleader", fontsize=8)
    axis.set_yticks(sorted({r["leader"] for r in controllers if r["leader"] is not None}))


def _broker_panel(axis: Any, brokers: list[Row], total: float, start: datetime) -> None:
    per_broker: dict[int, list[Row]] = {}
    for row in brokers:
        per_broker.setdefault(row["broker_id"], []).append(row)
    for broker_id, rows in per_broker.items():
        for begin, finish, row in _spans(rows, total, start):
            axis.broken_barh(
                [(begin, finish - begin)], (broker_id - 0.4, 0.8), color=STATE_COLOURS.get(row["state"], "#cccccc")
            )
    axis.set_yticks(sorted(per_broker))
    axis.set_ylabel("broker\nstate", fontsize=8)
    axis.legend(
        handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in STATE_COLOURS.values()],
        labels=list(STATE_COLOURS),
        fontsize=6,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
    )


def _partition_panel(axis: Any, tp: str, rows: list[Row], total: float, start: datetime) -> None:
    """Each replica's role over the run: leader, in the ISR, in the ELR or out; leader epochs marked."""
    replicas = sorted({r for row in rows for r in (row["replicas"] or [])})
    changes: list[tuple[float, int]] = []
    for begin, finish, row in _spans(rows, total, start):
        for replica in replicas:
            if replica == row["leader"]:
                colour = LEADER_COLOUR
            elif replica in (row["isr"] or []):
                colour = ISR_COLOUR
            elif replica in (row.get("elr") or []):
                colour = ELR_COLOUR
            else:
                colour = OUT_COLOUR
            axis.broken_barh([(begin, finish - begin)], (replica - 0.4, 0.8), color=colour)
        if not changes or changes[-1][1] != row["leader_epoch"]:
            changes.append((begin, row["leader_epoch"]))
    for label in epoch_labels(changes, total, "le"):
        axis.annotate(label.text, (label.x, max(replicas, default=0) + 0.45), fontsize=6)
    axis.set_yticks(replicas)
    axis.set_ylabel(tp, fontsize=8)


def failover_figure(path: Path, failovers: list[Row], controller_failovers: list[Row], start: datetime) -> Path:
    """Per leader lost to a fault: ms to fence, to a new committed leader, to the first acknowledged write."""
    labels, fence, leader, ack = [], [], [], []
    for row in failovers:
        labels.append(f"{row['fault']} {row['target']} t={_seconds(row['fault_ts'], start):.0f}s {row['tp']}")
        fence.append(row["fence_ms"] or 0)
        leader.append(row["new_leader_ms"] or 0)
        ack.append(row["first_ack_ms"] or 0)
    for row in controller_failovers:
        labels.append(f"{row['fault']} {row['target']} t={_seconds(row['fault_ts'], start):.0f}s KRaft")
        fence.append(0)
        leader.append(row["election_ms"] or 0)
        ack.append(0)
    height = max(2.5, 0.35 * len(labels) + 1.2)
    figure, axis = plt.subplots(figsize=(10, height))
    positions = range(len(labels))
    axis.barh([p + 0.27 for p in positions], fence, height=0.27, label="fenced", color=STATE_COLOURS["fenced"])
    axis.barh(list(positions), leader, height=0.27, label="new leader committed", color=LEADER_COLOUR)
    axis.barh([p - 0.27 for p in positions], ack, height=0.27, label="first acknowledged write", color="#5aa469")
    axis.set_yticks(list(positions))
    axis.set_yticklabels(labels, fontsize=7)
    axis.invert_yaxis()
    axis.set_xlabel("ms after the fault")
    axis.legend(fontsize=7)
    if not labels:
        axis.text(0.5, 0.5, "no leader was lost to a fault", ha="center", transform=axis.transAxes)
    figure.tight_layout()
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


def latency_figure(path: Path, latency: list[Row]) -> Path:
    """p50/p99/p999/max produce latency by acks (log scale)."""
    figure, axis = plt.subplots(figsize=(7, 3.5))
    names = ("p50_ms", "p99_ms", "p999_ms", "max_ms")
    width = 0.8 / len(names)
    for index, name in enumerate(names):
        axis.bar(
            [i + index * width for i in range(len(latency))],
            [row[name] or 0 for row in latency],
            width,
            label=name.removesuffix("_ms"),
        )
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(latency))])
    axis.set_xticklabels([f"acks={row['acks']}\n({row['acknowledged']} acked)" for row in latency], fontsize=8)
    axis.set_yscale("log")
    axis.set_ylabel("produce latency (ms)")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path


class PerSecond(NamedTuple):
    edges: list[float]  # one more than each series: second i spans edges[i] to edges[i + 1]
    acknowledged: list[int]
    failed: list[int]


def per_second(throughput: list[Row], start: datetime) -> PerSecond:
    """Every second from the first to the last with a send, a second without one counted as 0 (the Spark job
    lists only seconds that had sends, and a line joining across a gap would hide a stall)."""
    counts = {int(_seconds(row["second"], start) // 1): row for row in throughput}
    if not counts:
        return PerSecond([], [], [])
    seconds = range(min(counts), max(counts) + 1)
    acknowledged = [counts[s]["acknowledged"] if s in counts else 0 for s in seconds]
    failed = [counts[s]["failed"] if s in counts else 0 for s in seconds]
    return PerSecond([float(s) for s in seconds] + [float(seconds[-1] + 1)], acknowledged, failed)


def throughput_figure(path: Path, throughput: list[Row], faults: list[Row], start: datetime) -> Path:
    """Acknowledged and failed sends in each second, drawn as steps (a second without sends at 0), with the faults
    marked."""
    figure, axis = plt.subplots(figsize=(12, 3.2))
    series = per_second(throughput, start)
    if series.edges:
        axis.stairs(series.acknowledged, series.edges, label="acknowledged/s", color="#5aa469", linewidth=1.2)
        axis.stairs(series.failed, series.edges, label="failed/s", color=STATE_COLOURS["fenced"], linewidth=1.2)
    _fault_lines([axis], faults, start, axis)
    axis.set_xlabel("seconds since the start of the run")
    axis.set_ylabel("records/s")
    axis.legend(fontsize=7, loc="upper right")
    figure.tight_layout()
    figure.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(figure)
    return path
