"""The demo's failover figure: from the kill to the first acknowledged write to partition 0 sent after it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from minikafka.deploy.demo import _failover_ms


def _line(ts: datetime, latency_ms: float, partition: int = 0, error: str | None = None) -> str:
    return json.dumps(
        {
            "ts": ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "partition": partition,
            "error": error,
            "latency_ms": latency_ms,
        }
    )


def test_an_answer_from_the_killed_leader_is_not_the_failover(tmp_path: Path) -> None:
    killed_at = datetime(2026, 1, 1, tzinfo=UTC)
    history = tmp_path / "produce.jsonl"
    history.write_text(
        "\n".join(
            [
                _line(killed_at + timedelta(milliseconds=1), 5.0),  # sent before the kill, answered by the old leader
                _line(killed_at + timedelta(milliseconds=2500), 3000.0),  # sent before, retried to the new leader
                _line(killed_at + timedelta(milliseconds=2600), 100.0, partition=1),
                _line(killed_at + timedelta(milliseconds=2700), 100.0, error="NOT_LEADER_OR_FOLLOWER"),
                _line(killed_at + timedelta(milliseconds=2900), 400.0),  # sent after the kill: the first such ack
            ]
        )
        + "\n"
    )
    assert _failover_ms(history, killed_at) == 2900.0
