"""Compacted topics in the analysis: which topics are compacted, which acknowledged records compaction may remove,
the check that it never removed a key's latest acknowledged value, and the cleaner's figures.

A compacted topic (a `log_cleaned` event for one of its partitions, or a `topic_config_changed` setting
cleanup.policy with compact) may lose every record a later record of the same key replaced, once that later record
was acknowledged with acks=all or read: such records are not lost writes. What it must keep is
CompactedLatestValueKept: in the final read of each partition (the read that got furthest), for every key whose
latest record that must stay (the later of its latest acks=all acknowledged record and the latest one any read saw)
that read covered, the last record read of the key is that record (same offset and value), or a later one of the key
(an unacknowledged write that landed); when that latest record is a tombstone, the key may be absent, but no older
value of it may come back.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

PARTITION_LABEL = r"^(.*)-\d+$"


def compacted_topics(events: DataFrame) -> DataFrame:
    """(topic) of every topic the run compacted or configured as compacted."""
    cleaned = events.where(F.col("event") == "log_cleaned").select(
        F.regexp_extract("partition", PARTITION_LABEL, 1).alias("topic")
    )
    configured = events.where(
        (F.col("event") == "topic_config_changed")
        & (F.col("name") == "cleanup.policy")
        & F.col("value").contains("compact")
    ).select("topic")
    return cleaned.unionByName(configured).where(F.col("topic") != "").distinct()


def _acknowledged_keyed(produced: DataFrame, compacted: DataFrame, acks: tuple[str, ...]) -> DataFrame:
    acked = produced.where(
        F.col("error").isNull() & F.col("offset").isNotNull() & F.col("key").isNotNull() & F.col("acks").isin(*acks)
    )
    return acked.join(compacted, "topic", "left_semi")


def superseded(produced: DataFrame, compacted: DataFrame, consumed: DataFrame) -> DataFrame:
    """(topic, partition, offset) of acknowledged records of compacted topics that a later record of the same key
    replaced for good: the cleaner may remove them. The later record counts once it was acknowledged with acks=all
    or a read saw it (reads stop at the high watermark, so it was committed); a later acks=1 or acks=0 write no read
    saw may have been truncated away, and then the record it would have replaced must stay."""
    acked = _acknowledged_keyed(produced, compacted, ("all", "1", "0"))
    keyed = ["topic", "partition", "key"]
    durable = _acknowledged_keyed(produced, compacted, ("all",)).select(*keyed, "offset")
    read = consumed.where(F.col("key").isNotNull()).join(compacted, "topic", "left_semi").select(*keyed, "offset")
    newest = durable.unionByName(read).groupBy(*keyed).agg(F.max("offset").alias("newest"))
    return acked.join(newest, keyed).where(F.col("offset") < F.col("newest")).select("topic", "partition", "offset")


def final_reads(consumed: DataFrame, ends: DataFrame) -> DataFrame:
    """(topic, partition, source, below_offset): for each partition the one read that got furthest (a read with a
    read_end line that reached its high watermark, or a file's last offset read + 1)."""
    ended = ends.where(F.col("reached")).select("topic", "partition", "source", F.col("position").alias("below_offset"))
    unended = (
        consumed.groupBy("source", "topic", "partition")
        .agg((F.max("offset") + 1).alias("below_offset"))
        .join(ends.select("source", "topic", "partition"), ["source", "topic", "partition"], "left_anti")
    )
    furthest = Window.partitionBy("topic", "partition").orderBy(F.desc("below_offset"), F.desc("source"))
    candidates = ended.unionByName(unended).where(F.col("below_offset").isNotNull())
    return candidates.withColumn("rank", F.row_number().over(furthest)).where(F.col("rank") == 1).drop("rank")


def _latest_records(produced: DataFrame, consumed: DataFrame, compacted: DataFrame) -> DataFrame:
    """(topic, partition, key, acked_offset, acked_value): each key's latest record that must stay, the later of
    its latest acks=all acknowledged record and the latest record any read saw of it (a read record was committed,
    whoever wrote it: a tombstone an acks=1 producer wrote deletes the key as surely). On a tie the acknowledged
    value is the one judged."""
    keyed = ["topic", "partition", "key", "offset", "value"]
    acked = _acknowledged_keyed(produced, compacted, ("all",)).select(*keyed).withColumn("read", F.lit(False))
    read = consumed.where(F.col("key").isNotNull()).join(compacted, "topic", "left_semi").select(*keyed)
    newest = Window.partitionBy("topic", "partition", "key").orderBy(F.desc("offset"), F.asc("read"))
    return (
        acked.unionByName(read.withColumn("read", F.lit(True)))
        .withColumn("rank", F.row_number().over(newest))
        .where(F.col("rank") == 1)
        .select("topic", "partition", "key", F.col("offset").alias("acked_offset"), F.col("value").alias("acked_value"))
    )


def latest_value_lost(produced: DataFrame, consumed: DataFrame, ends: DataFrame, compacted: DataFrame) -> DataFrame:
    """CompactedLatestValueKept's offending rows: (topic, partition, key, acked_offset, acked_value, source,
    read_offset, read_value); acked_* the key's latest record that must stay (acknowledged with acks=all, or read),
    read_* null when the final read held nothing of the key."""
    latest = _latest_records(produced, consumed, compacted)
    final = final_reads(consumed, ends)
    read = consumed.where(F.col("key").isNotNull()).join(final, ["topic", "partition", "source"], "left_semi")
    newest = Window.partitionBy("topic", "partition", "key").orderBy(F.desc("offset"))
    last_read = (
        read.withColumn("rank", F.row_number().over(newest))
        .where(F.col("rank") == 1)
        .select("topic", "partition", "key", F.col("offset").alias("read_offset"), F.col("value").alias("read_value"))
    )
    covered = latest.join(final, ["topic", "partition"]).where(F.col("acked_offset") < F.col("below_offset"))
    joined = covered.join(last_read, ["topic", "partition", "key"], "left")
    kept_value = F.col("read_offset").isNotNull() & (
        (F.col("read_offset") > F.col("acked_offset"))
        | ((F.col("read_offset") == F.col("acked_offset")) & F.col("read_value").eqNullSafe(F.col("acked_value")))
    )
    resurrected = F.col("read_value").isNotNull() & (F.col("read_offset") <= F.col("acked_offset"))
    lost = F.when(F.col("acked_value").isNull(), resurrected).otherwise(~kept_value)
    return (
        joined.where(lost)
        .select("topic", "partition", "key", "acked_offset", "acked_value", "source", "read_offset", "read_value")
        .orderBy("topic", "partition", "key")
    )


def latest_keys_checked(produced: DataFrame, consumed: DataFrame, compacted: DataFrame) -> int:
    """How many (topic, partition, key) the check looks at."""
    return _latest_records(produced, consumed, compacted).count()


def cleaner_summary(events: DataFrame) -> dict[str, Any]:
    """The cleaners' work over the run, from log_cleaned: cleanings, bytes and records before and after, tombstones
    removed, the longest cleaning."""
    row = (
        events.where(F.col("event") == "log_cleaned")
        .agg(
            F.count("*").alias("cleanings"),
            F.countDistinct("partition").alias("partitions"),
            F.sum("bytes_before").alias("bytes_before"),
            F.sum("bytes_after").alias("bytes_after"),
            F.sum("records_before").alias("records_before"),
            F.sum("records_after").alias("records_after"),
            F.sum("tombstones_removed").alias("tombstones_removed"),
            F.max("duration_ms").alias("max_duration_ms"),
        )
        .collect()[0]
    )
    return {key: (value or 0) for key, value in row.asDict().items()}
