"""A partition log's settings (Kafka's log.* / topic config names in snake_case)."""

from __future__ import annotations

from dataclasses import dataclass

LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824  # log.segment.bytes
    segment_ms: int = 604800000  # log.roll.ms
    retention_bytes: int = -1  # log.retention.bytes (-1: unlimited)
    retention_ms: int = 604800000  # log.retention.ms (-1: unlimited)
    index_interval_bytes: int = 4096  # log.index.interval.bytes
    flush_interval_messages: int = LONG_MAX  # log.flush.interval.messages
    flush_interval_ms: int | None = None  # log.flush.interval.ms (None: no time-based flush)
    recovery_point_checkpoint_interval_ms: int = 60000  # log.flush.offset.checkpoint.interval.ms
    simulate_page_cache: bool = False  # log.simulate.page.cache
    max_message_bytes: int = 1048588  # message.max.bytes
