"""NoStrayPartitionLogs lists the partition logs the final metadata does not assign to their broker: a deleted
topic's log (its topic id gone, even if the topic was re-created under a new id) and a replica moved off its
broker; the logs the metadata assigns are not listed."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_fixtures import TOPIC_ID, RunFixture, clean_run, partition_changed

from minikafka.deploy.analysis.events import load_events
from minikafka.deploy.analysis.stray_partitions import stray_partition_logs
from minikafka.storage.checkpoint import PartitionMetadataFile

pytestmark = pytest.mark.spark

OLD_ID = "6b1c9f0e-0000-4000-8000-0000000000aa"
NEW_ID = "6b1c9f0e-0000-4000-8000-0000000000bb"


def strays(spark, tmp_path: Path, run: RunFixture, logs: dict[str, str]) -> list[dict]:  # noqa: ANN001
    """`logs`: extra partition directories on broker-3, "<tp>" -> the topic id in its partition.metadata."""
    run_dir = run.write(tmp_path / "run")
    for tp, topic_id in logs.items():
        directory = run_dir / "broker-3" / "data" / tp
        directory.mkdir(parents=True)
        PartitionMetadataFile(directory / "partition.metadata").write(topic_id)
    rows = stray_partition_logs(spark, load_events(spark, run_dir), run_dir).collect()
    return [{k: v for k, v in row.asDict().items() if k != "directory"} for row in rows]


def test_a_clean_run_has_no_stray_log(spark, tmp_path: Path) -> None:  # noqa: ANN001
    assert strays(spark, tmp_path, clean_run(), {}) == []


def test_deleted_topic_and_moved_replica_are_listed(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    moved = {**partition_changed(20, 12.0, 2, [2, 1], 1, 4, "reassignment"), "replicas": [2, 1]}
    old = {**partition_changed(21, 12.5, 2, [2, 3], 0, 0, "create"), "topic": "gone", "topic_id": OLD_ID}
    removed = {"event": "topic_deleted", "at": 13.0, "offset": 22, "topic": "gone", "topic_id": OLD_ID}
    again = {**partition_changed(23, 14.0, 2, [2, 3], 0, 0, "create"), "topic": "gone", "topic_id": NEW_ID}
    run.replayed += [moved, old, removed, again]
    rows = strays(spark, tmp_path, run, {"gone-0": OLD_ID})
    assert rows == [
        {"node": "broker-3", "tp": "gone-0", "topic_id": OLD_ID, "reason": f"topic id {OLD_ID} is not in the metadata"},
        {"node": "broker-3", "tp": "t-0", "topic_id": TOPIC_ID, "reason": "not a replica (replicas 2, 1)"},
    ]
    assert strays(spark, tmp_path / "assigned", run, {"gone-0": NEW_ID}) == [rows[1]]
