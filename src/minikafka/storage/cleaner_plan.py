"""The log cleaner's decisions, pure (Kafka's LogCleanerManager): which compacted log to clean next and how far,
and how its segments are grouped into cleaned ones. Plain data in, a plan out; the shell reads the logs and runs it.

A log's part below the cleaner checkpoint (the first dirty offset) is clean: cleaned before, each key at most once.
The dirty part runs from there to the first uncleanable offset: the smallest of the active segment's base (never
cleaned), the high watermark (nothing a replica may still lose is compacted), the last stable offset (an undecided
transaction's records are not cleaned: whether they are aborted is not known yet), and the base of the first segment
holding a record younger than min.compaction.lag.ms. A log is cleaned when its dirty ratio (dirty bytes over clean
plus dirty bytes) reaches min.cleanable.dirty.ratio, or when a dirty record is older than max.compaction.lag.ms,
or when a tombstone it kept is past delete.retention.ms. The filthiest such log goes first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class SegmentSummary:
    base_offset: int
    next_offset: int
    size: int
    first_timestamp: int  # of its first batch (-1: none, or no timestamps)
    max_timestamp: int  # -1: none


@dataclass(frozen=True)
class CleanableLog:
    """What the planner needs to know of one compacted log."""

    name: str
    segments: tuple[SegmentSummary, ...]  # oldest first; the last is the active segment
    log_start_offset: int
    high_watermark: int
    checkpoint: int | None  # the cleaner checkpoint: the first dirty offset of the last cleaning
    min_cleanable_ratio: float
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    tombstones_due_ms: int | None = None  # the earliest time a kept tombstone or marker may go (None: none kept)
    last_stable_offset: int | None = None  # None: no transaction undecided (the high watermark bounds)


@dataclass(frozen=True)
class LogToClean:
    name: str
    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    forced: str | None  # why it is cleaned below the dirty ratio: "max.compaction.lag.ms" or "delete.retention.ms"

    @property
    def dirty_ratio(self) -> float:
        total = self.clean_bytes + self.dirty_bytes
        return self.dirty_bytes / total if total else 0.0


def first_dirty_offset(log: CleanableLog) -> int:
    """The checkpoint, unless retention or a truncation moved the log out from under it (Kafka resets it then)."""
    end = log.segments[-1].next_offset
    if log.checkpoint is None or log.checkpoint < log.log_start_offset or log.checkpoint > end:
        return log.log_start_offset
    return log.checkpoint


def first_uncleanable_offset(log: CleanableLog, now_ms: int) -> int:
    limit = min(log.segments[-1].base_offset, log.high_watermark)
    if log.last_stable_offset is not None:
        limit = min(limit, log.last_stable_offset)
    if log.min_compaction_lag_ms > 0:
        for segment in log.segments[:-1]:
            if segment.max_timestamp >= 0 and now_ms - segment.max_timestamp < log.min_compaction_lag_ms:
                limit = min(limit, segment.base_offset)
                break
    return limit


def assess(log: CleanableLog, now_ms: int) -> LogToClean | None:
    """Whether and how far `log` is to be cleaned now; None when it is not. Only whole inactive segments are
    cleaned, each ending where the next begins (a cleaned one may hold nothing up to there)."""
    dirty_from = first_dirty_offset(log)
    dirty_to = first_uncleanable_offset(log, now_ms)
    ends = [segment.base_offset for segment in log.segments[1:]]
    whole = [(segment, end) for segment, end in zip(log.segments[:-1], ends, strict=True) if end <= dirty_to]
    if not whole:
        return None
    clean = sum(segment.size for segment, end in whole if end <= dirty_from)
    dirty_segments = [segment for segment, end in whole if end > dirty_from]
    dirty = sum(segment.size for segment in dirty_segments)
    ratio_met = dirty > 0 and dirty / (clean + dirty) >= log.min_cleanable_ratio
    forced = _forced(log, dirty_segments, now_ms)
    if not ratio_met and forced is None:
        return None
    return LogToClean(log.name, dirty_from, whole[-1][1], clean, dirty, None if ratio_met else forced)


def _forced(log: CleanableLog, dirty: Sequence[SegmentSummary], now_ms: int) -> str | None:
    if dirty and dirty[0].first_timestamp >= 0 and now_ms - dirty[0].first_timestamp > log.max_compaction_lag_ms:
        return "max.compaction.lag.ms"
    if log.tombstones_due_ms is not None and now_ms >= log.tombstones_due_ms:
        return "delete.retention.ms"
    return None


def filthiest(logs: Sequence[CleanableLog], now_ms: int) -> LogToClean | None:
    """Kafka's grabFilthiestCompactedLog: of the logs due, the one with the highest dirty ratio (forced ones
    first, so a max.compaction.lag.ms bound is kept however clean other logs look)."""
    due = [plan for log in logs if (plan := assess(log, now_ms)) is not None]
    if not due:
        return None
    return max(due, key=lambda plan: (plan.forced is not None, plan.dirty_ratio))


def group_segments(
    segments: Sequence[SegmentSummary], end_offset: int, max_segment_bytes: int
) -> list[list[SegmentSummary]]:
    """Kafka's groupSegmentsBySize: consecutive segments below `end_offset` whose total size fits one segment and
    whose offsets fit its 32-bit relative index, each group to become one cleaned segment."""
    groups: list[list[SegmentSummary]] = []
    for position, segment in enumerate(segments):
        following = segments[position + 1].base_offset if position + 1 < len(segments) else segment.next_offset
        if following > end_offset:
            break
        group = groups[-1] if groups else None
        if (
            group is not None
            and sum(s.size for s in group) + segment.size <= max_segment_bytes
            and following - 1 - group[0].base_offset <= INT32_MAX
        ):
            group.append(segment)
        else:
            groups.append([segment])
    return groups
