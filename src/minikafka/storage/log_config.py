"""A partition log's settings (Kafka's log.* / topic config names in snake_case)."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.compression import GZIP_LEVEL, LZ4_LEVEL, ZSTD_LEVEL, CompressionType

LONG_MAX = 2**63 - 1
CREATE_TIME, LOG_APPEND_TIME = "CreateTime", "LogAppendTime"  # message.timestamp.type's values


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1073741824  # log.segment.bytes
    segment_ms: int = 604800000  # log.roll.ms
    segment_jitter_ms: int = 0  # log.roll.jitter.ms: a segment rolls up to this much before segment.ms
    retention_bytes: int = -1  # log.retention.bytes (-1: unlimited)
    retention_ms: int = 604800000  # log.retention.ms (-1: unlimited)
    index_interval_bytes: int = 4096  # log.index.interval.bytes
    segment_index_bytes: int = 10485760  # log.index.size.max.bytes: a segment whose offset index is full rolls
    flush_interval_messages: int = LONG_MAX  # log.flush.interval.messages
    flush_interval_ms: int | None = None  # log.flush.interval.ms (None: no time-based flush)
    recovery_point_checkpoint_interval_ms: int = 60000  # log.flush.offset.checkpoint.interval.ms
    simulate_page_cache: bool = False  # log.simulate.page.cache
    max_message_bytes: int = 1048588  # message.max.bytes
    cleanup_policy: tuple[str, ...] = ("delete",)  # cleanup.policy: delete and/or compact
    min_cleanable_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms
    delete_retention_ms: int = 86400000  # delete.retention.ms: how long a tombstone outlives its key's values
    compression_type: str = "producer"  # compression.type: the codec a producer's batches are stored with
    compression_gzip_level: int = GZIP_LEVEL.default  # compression.gzip.level
    compression_lz4_level: int = LZ4_LEVEL.default  # compression.lz4.level
    compression_zstd_level: int = ZSTD_LEVEL.default  # compression.zstd.level
    message_timestamp_type: str = CREATE_TIME  # message.timestamp.type: CreateTime or LogAppendTime
    message_timestamp_before_max_ms: int = LONG_MAX  # message.timestamp.before.max.ms (LONG_MAX: no bound)
    message_timestamp_after_max_ms: int = 3600000  # message.timestamp.after.max.ms: Kafka 4's one hour

    def compression_level(self, codec: CompressionType | None) -> int | None:
        """The level the leader compresses `codec` with (None: a codec without levels)."""
        levels = {
            CompressionType.GZIP: self.compression_gzip_level,
            CompressionType.LZ4: self.compression_lz4_level,
            CompressionType.ZSTD: self.compression_zstd_level,
        }
        return levels.get(codec) if codec is not None else None

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """When the active segment rolls by age: a compacted log also by max.compaction.lag.ms, so no record stays
        uncleanable in the active segment longer than that (Kafka's LogConfig.maxSegmentMs)."""
        return min(self.segment_ms, self.max_compaction_lag_ms) if self.compact else self.segment_ms
