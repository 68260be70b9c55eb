"""How far the reads went: acknowledged records read back, lost and unknown, and for each partition with unknown
records, why no read reached them (from the consumers' read_end lines)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.deploy.analysis.history_invariants import Unread

Row = dict[str, Any]


def stop_reason(ends: list[Row]) -> str:
    """Why the reads of one partition did not reach its unknown records, from its read_end lines (any consumer)."""
    if not ends:
        return "no read_end line: no `consume --json` read of this partition completed (or it was cut short)"
    reasons = []
    for end in ends:
        where = f"{end['source']} stopped at offset {end['position']}"
        if end["error"]:
            reasons.append(f"{where}: {end['error']}")
        elif end["reached"]:
            reasons.append(f"{where}, the high watermark then; the acknowledged offsets are above it")
        elif end["high_watermark"] is None:
            reasons.append(f"{where} before any leader answered a fetch")
        else:
            reasons.append(f"{where}, below the high watermark {end['high_watermark']} (--max-messages or stopped)")
    return "; ".join(reasons)


def final_read_summary(acknowledged: int, deleted: int, unread: Unread, lost: int, ends: DataFrame) -> Row:
    """{"acknowledged", "read", "lost", "unknown", "deleted_with_topic", "incomplete_partitions": [{"topic",
    "partition", "unknown", "first_offset", "last_offset", "reason"}]} (two small Spark jobs: unknown per partition
    and the read_ends). Of the `acknowledged` acks=all records, `deleted` went with their topic: neither read, lost
    nor unknown."""
    unknown_rows = (
        unread.unknown.groupBy("topic", "partition")
        .agg(
            F.count("*").alias("unknown"),
            F.min("offset").alias("first_offset"),
            F.max("offset").alias("last_offset"),
        )
        .orderBy("topic", "partition")
        .collect()
    )
    by_partition: dict[tuple[str, int], list[Row]] = {}
    if unknown_rows:
        for end in ends.orderBy("source").collect():
            by_partition.setdefault((end["topic"], end["partition"]), []).append(end.asDict())
    partitions = [
        {**row.asDict(), "reason": stop_reason(by_partition.get((row["topic"], row["partition"]), []))}
        for row in unknown_rows
    ]
    unknown = sum(p["unknown"] for p in partitions)
    return {
        "acknowledged": acknowledged,
        "read": acknowledged - deleted - lost - unknown,
        "lost": lost,
        "unknown": unknown,
        "deleted_with_topic": deleted,
        "incomplete_partitions": partitions,
    }
