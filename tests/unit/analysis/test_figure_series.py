"""What the figures draw: throughput per second with its silent seconds at 0, epoch labels that do not overlap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from minikafka.deploy.analysis.figures import EpochLabel, epoch_labels, per_second

START = datetime(2026, 1, 1, tzinfo=UTC)


def _second(offset: int, acknowledged: int, failed: int = 0) -> dict:
    return {"second": START + timedelta(seconds=offset), "acknowledged": acknowledged, "failed": failed}


def test_a_three_second_stall_is_three_seconds_at_zero() -> None:
    series = per_second([_second(0, 900), _second(1, 950, 2), _second(5, 800)], START)
    assert series.edges == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert series.acknowledged == [900, 950, 0, 0, 0, 800] and series.failed == [0, 2, 0, 0, 0, 0]
    assert per_second([], START).edges == []


def test_epoch_changes_close_together_share_a_label() -> None:
    changes = [(0.0, 0), (30.0, 1), (30.5, 2), (31.0, 3), (60.0, 4)]
    assert epoch_labels(changes, 100.0, "le") == [
        EpochLabel(0.0, "le0"),
        EpochLabel(30.0, "le1-le3"),
        EpochLabel(60.0, "le4"),
    ]
