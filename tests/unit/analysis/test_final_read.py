"""Acknowledged records not read back are lost only where a read covered their offset; elsewhere unknown."""

from __future__ import annotations

from pathlib import Path

import pytest
from run_fixtures import clean_run, read_end

from minikafka.deploy.analysis import history_invariants as inv
from minikafka.deploy.analysis.history import consumed_records, read_consume_files, read_ends, read_produced

pytestmark = pytest.mark.spark


def split_unread(spark, run_dir: Path) -> tuple[list[int], list[int]]:  # noqa: ANN001
    lines = read_consume_files(spark, run_dir).rows
    unread = inv.classify_unread(read_produced(spark, run_dir).rows, consumed_records(lines), read_ends(lines))
    return [r["offset"] for r in unread.lost.collect()], [r["offset"] for r in unread.unknown.collect()]


def test_an_empty_final_read_leaves_every_record_unknown_not_lost(spark, tmp_path: Path) -> None:  # noqa: ANN001
    # The README's run: `consume` gave up right after `fault kill 1` and wrote nothing.
    run = clean_run()
    run.consumed = []
    assert split_unread(spark, run.write(tmp_path / "run")) == ([], [0, 1, 2, 3, 4, 5])


def test_a_read_that_reached_the_high_watermark_finds_a_lost_record(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.consumed = [c for c in run.consumed if c["offset"] != 4] + [read_end(6, 6, None)]
    assert split_unread(spark, run.write(tmp_path / "run")) == ([4], [])


def test_a_read_stopped_by_an_error_covers_only_what_it_passed(spark, tmp_path: Path) -> None:  # noqa: ANN001
    run = clean_run()
    run.consumed = [c for c in run.consumed if c["offset"] in (0, 2)] + [read_end(3, 6, "LEADER_NOT_AVAILABLE")]
    assert split_unread(spark, run.write(tmp_path / "run")) == ([1], [3, 4, 5])
