"""Small synthetic run directories for the analysis tests: event logs, client histories and replica logs.

`clean_run()` describes a run in which every invariant holds: 3 brokers, one partition `t-0` with replicas
[1, 2, 3], an ISR shrink and expansion, a leader fenced and a new leader elected, acknowledged writes read back
and identical replica logs. Tests change one thing to break one invariant.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from minikafka.common.record_batch import Record, build_batch
from minikafka.storage.checkpoint import OffsetCheckpoint, PartitionMetadataFile

START = datetime(2026, 11, 22, 18, 0, 0, tzinfo=UTC)
TOPIC_ID = "6b1c9f0e-0000-4000-8000-000000000001"
CONTROLLERS = ("controller-101", "controller-102")


def ts(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def event(node: str, at: float, name: str, **fields: Any) -> dict[str, Any]:
    return {"ts": ts(at), "node": node, "level": "info", "event": name, **fields}


def partition_changed(
    offset: int, at: float, leader: int, isr: list[int], leader_epoch: int, partition_epoch: int, reason: str
) -> dict[str, Any]:
    return {
        "event": "partition_changed",
        "at": at,
        "offset": offset,
        "topic": "t",
        "topic_id": TOPIC_ID,
        "partition": 0,
        "leader": leader,
        "isr": isr,
        "replicas": [1, 2, 3],
        "leader_epoch": leader_epoch,
        "partition_epoch": partition_epoch,
        "reason": reason,
    }


def broker_registered(offset: int, at: float, broker_id: int) -> dict[str, Any]:
    return {"event": "broker_registered", "at": at, "offset": offset, "broker_id": broker_id, "broker_epoch": offset}


@dataclass
class RunFixture:
    """What a run directory will hold; `write` turns it into files."""

    replayed: list[dict[str, Any]] = field(default_factory=list)  # logged by every controller at replay
    node_events: list[dict[str, Any]] = field(default_factory=list)  # each logged by its own node
    produced: list[dict[str, Any]] = field(default_factory=list)
    consumed: list[dict[str, Any]] = field(default_factory=list)
    replica_values: dict[str, list[list[str]]] = field(default_factory=dict)  # node -> batches of values
    replica_epochs: dict[str, list[int]] = field(default_factory=dict)  # node -> leader epoch per batch
    high_watermarks: dict[str, int] = field(default_factory=dict)

    def copy(self) -> RunFixture:
        return copy.deepcopy(self)

    def write(self, run_dir: Path) -> Path:
        logs = run_dir / "logs"
        history = run_dir / "history"
        logs.mkdir(parents=True)
        history.mkdir()
        lines: dict[str, list[dict[str, Any]]] = {}
        for record in self.replayed:
            fields = {k: v for k, v in record.items() if k not in ("event", "at", "only_on")}
            for node in record.get("only_on", CONTROLLERS):
                lines.setdefault(node, []).append(event(node, record["at"], record["event"], **fields))
        for line in self.node_events:
            lines.setdefault(line["node"], []).append(line)
        for node, events in lines.items():
            events.sort(key=lambda e: e["ts"])
            (logs / f"{node}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
        (history / "produce-0.jsonl").write_text("".join(json.dumps(p) + "\n" for p in self.produced))
        (history / "consume-final.jsonl").write_text("".join(json.dumps(c) + "\n" for c in self.consumed))
        for node, batches in self.replica_values.items():
            directory = run_dir / node / "data" / "t-0"
            directory.mkdir(parents=True)
            data = bytearray()
            offset = 0
            for index, values in enumerate(batches):
                records = [Record(value.encode()) for value in values]
                data += build_batch(records, offset, self.replica_epochs[node][index])
                offset += len(values)
            (directory / "00000000000000000000.log").write_bytes(bytes(data))
            OffsetCheckpoint(directory / "replication-offset-checkpoint", "t-0").write(self.high_watermarks[node])
            PartitionMetadataFile(directory / "partition.metadata").write(TOPIC_ID)
        return run_dir


def produced_line(at: float, offset: int | None, value: str, error: str | None = None) -> dict[str, Any]:
    return {
        "ts": ts(at),
        "topic": "t",
        "partition": 0,
        "offset": offset,
        "value": value,
        "acks": "all",
        "error": error,
        "latency_ms": 2.0,
    }


def consumed_line(offset: int, value: str) -> dict[str, Any]:
    return {"topic": "t", "partition": 0, "offset": offset, "key": None, "value": value, "leader_epoch": 0}


def read_end(
    position: int | None, high_watermark: int | None, error: str | None, start: int = 0, log_end: int | None = None
) -> dict:
    """A consume --json read_end line for t-0 (reached when it stopped at the high watermark without an error;
    `log_end`: the latest offset ListOffsets confirmed then)."""
    reached = error is None and position is not None and high_watermark is not None and position >= high_watermark
    return {
        "type": "read_end",
        "topic": "t",
        "partition": 0,
        "start_offset": start,
        "position": position,
        "high_watermark": high_watermark,
        "reached": reached,
        "error": error,
        "log_end": log_end,
    }


def clean_run() -> RunFixture:
    run = RunFixture()
    run.replayed = [
        broker_registered(1, 1.0, 1),
        broker_registered(2, 1.1, 2),
        broker_registered(3, 1.2, 3),
        {"event": "broker_unfenced", "at": 1.5, "offset": 4, "broker_id": 1, "broker_epoch": 1, "applied": True},
        partition_changed(5, 2.0, 1, [1, 2, 3], 0, 0, "create"),
        partition_changed(8, 5.0, 1, [1, 2], 0, 1, "alter_partition"),
        partition_changed(10, 7.0, 1, [1, 2, 3], 0, 2, "alter_partition"),
        {
            "event": "broker_fenced",
            "at": 9.0,
            "offset": 11,
            "broker_id": 1,
            "broker_epoch": 1,
            "applied": True,
            "reason": "session_timeout",
        },
        partition_changed(12, 9.0, 2, [2, 3], 1, 3, "fence:session_timeout"),
    ]
    leader_node, controller_node = "broker-1", "controller-101"
    run.node_events = [
        event(controller_node, 0.5, "controller_started"),
        event("controller-102", 0.5, "controller_started"),
        event(controller_node, 0.9, "raft_leader_elected", raft_node=101, epoch=1, leader=101),
        event("controller-102", 0.9, "raft_leader_discovered", raft_node=102, epoch=1, leader=101),
        event(leader_node, 0.6, "broker_starting"),
        event("broker-2", 0.6, "broker_starting"),
        event(
            leader_node,
            2.1,
            "become_leader",
            partition="t-0",
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
            isr=[1, 2, 3],
            leader_epoch_start_offset=0,
        ),
        event(
            leader_node,
            3.0,
            "high_watermark_advanced",
            partition="t-0",
            high_watermark=2,
            leader_epoch=0,
            log_end_offset=2,
        ),
        event(
            leader_node,
            6.0,
            "high_watermark_advanced",
            partition="t-0",
            high_watermark=4,
            leader_epoch=0,
            log_end_offset=4,
        ),
        event(
            controller_node,
            6.9,
            "alter_partition_accepted",
            broker_id=1,
            topic="t",
            topic_id=TOPIC_ID,
            partition=0,
            isr=[1, 2, 3],
            proposed_isr=[[1, 1], [2, 2], [3, 3]],
            leader_epoch=0,
            partition_epoch=2,
            changed=True,
        ),
        event(
            "broker-2",
            9.1,
            "become_leader",
            partition="t-0",
            leader=2,
            leader_epoch=1,
            partition_epoch=3,
            isr=[2, 3],
            leader_epoch_start_offset=6,
        ),
        event(
            "broker-2",
            9.5,
            "high_watermark_advanced",
            partition="t-0",
            high_watermark=6,
            leader_epoch=1,
            log_end_offset=6,
        ),
        event("fault-injector", 8.0, "fault_injected", fault="kill", target="broker-1", target_id=1, role="broker"),
    ]
    values = [f"v{i}" for i in range(6)]
    run.produced = [produced_line(2.5 + i, i, value) for i, value in enumerate(values)]
    run.produced[-1]["ts"] = ts(9.6)  # the last write is acknowledged by the new leader
    run.consumed = [consumed_line(i, value) for i, value in enumerate(values)]
    batches = [values[0:2], values[2:4], values[4:6]]
    for node in ("broker-1", "broker-2", "broker-3"):
        run.replica_values[node] = copy.deepcopy(batches)
        run.replica_epochs[node] = [0, 0, 0]
        run.high_watermarks[node] = 6
    return run
