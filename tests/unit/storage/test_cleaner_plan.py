"""The log cleaner's planner: which log is cleaned, and how far (Kafka's LogCleanerManager rules)."""

from __future__ import annotations

from dataclasses import replace

from minikafka.storage.cleaner_plan import (
    CleanableLog,
    SegmentSummary,
    assess,
    filthiest,
    first_dirty_offset,
    group_segments,
)

NOW = 1_000_000


def segments(*bounds: int, size: int = 100, timestamp: int = 0) -> tuple[SegmentSummary, ...]:
    """Contiguous segments starting at each bound; the last bound is the log end (the active segment, empty)."""
    made = [
        SegmentSummary(base, following, size, timestamp, timestamp)
        for base, following in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    return (*made, SegmentSummary(bounds[-1], bounds[-1], 0, -1, -1))


def log(**changes: object) -> CleanableLog:
    base = CleanableLog(
        name="t-0",
        segments=segments(0, 10, 20, 30),
        log_start_offset=0,
        high_watermark=30,
        checkpoint=None,
        min_cleanable_ratio=0.5,
        min_compaction_lag_ms=0,
        max_compaction_lag_ms=2**63 - 1,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_a_never_cleaned_log_is_all_dirty_up_to_the_active_segment() -> None:
    plan = assess(log(), NOW)
    assert plan is not None
    assert (plan.first_dirty_offset, plan.first_uncleanable_offset) == (0, 30)
    assert (plan.clean_bytes, plan.dirty_bytes, plan.dirty_ratio, plan.forced) == (0, 300, 1.0, None)


def test_the_active_segment_alone_is_never_cleaned() -> None:
    assert assess(log(segments=segments(0)), NOW) is None


def test_below_the_dirty_ratio_nothing_is_cleaned_and_at_it_the_log_is() -> None:
    # Two segments clean, one dirty: ratio 1/3.
    assert assess(log(checkpoint=20), NOW) is None
    plan = assess(log(checkpoint=20, min_cleanable_ratio=0.3), NOW)
    assert plan is not None and plan.first_dirty_offset == 20 and round(plan.dirty_ratio, 2) == 0.33


def test_the_high_watermark_bounds_the_dirty_section_to_whole_segments_below_it() -> None:
    plan = assess(log(high_watermark=25), NOW)
    assert plan is not None and plan.first_uncleanable_offset == 20


def test_min_compaction_lag_keeps_young_segments_out() -> None:
    young = (
        SegmentSummary(0, 10, 100, 0, 0),
        SegmentSummary(10, 20, 100, NOW - 10, NOW - 10),
        SegmentSummary(20, 20, 0, -1, -1),
    )
    plan = assess(log(segments=young, high_watermark=20, min_compaction_lag_ms=100), NOW)
    assert plan is not None and plan.first_uncleanable_offset == 10
    assert assess(log(segments=young, high_watermark=20, min_compaction_lag_ms=NOW * 2), NOW) is None


def test_max_compaction_lag_forces_a_clean_below_the_ratio() -> None:
    old = log(checkpoint=20, segments=segments(0, 10, 20, 30, timestamp=NOW - 500))
    assert assess(old, NOW) is None
    plan = assess(replace(old, max_compaction_lag_ms=100), NOW)
    assert plan is not None and plan.forced == "max.compaction.lag.ms"


def test_tombstones_past_their_retention_force_a_clean_of_a_clean_log() -> None:
    clean = log(checkpoint=30)
    assert assess(clean, NOW) is None
    assert assess(replace(clean, tombstones_due_ms=NOW + 1), NOW) is None
    plan = assess(replace(clean, tombstones_due_ms=NOW), NOW)
    assert plan is not None and plan.forced == "delete.retention.ms" and plan.first_uncleanable_offset == 30


def test_a_checkpoint_outside_the_log_is_reset_to_the_log_start() -> None:
    assert first_dirty_offset(log(checkpoint=5, log_start_offset=10, segments=segments(10, 20, 30))) == 10
    assert first_dirty_offset(log(checkpoint=99)) == 0


def test_the_filthiest_log_goes_first_forced_ones_before_all() -> None:
    dirty = log(name="dirty")
    half = log(name="half", checkpoint=10, min_cleanable_ratio=0.1)
    forced = log(name="forced", checkpoint=30, tombstones_due_ms=0)
    assert filthiest([half, dirty], NOW).name == "dirty"  # type: ignore[union-attr]
    assert filthiest([half, dirty, forced], NOW).name == "forced"  # type: ignore[union-attr]
    assert filthiest([log(checkpoint=30)], NOW) is None


def test_segments_are_grouped_to_fit_one_segment() -> None:
    summaries = list(segments(0, 10, 20, 30, 40)[:-1])
    groups = group_segments(summaries, 40, 250)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20, 30]]
    assert [[s.base_offset for s in g] for g in group_segments(summaries, 20, 1000)] == [[0, 10]]
