"""How many items the checks looked at (their `checked` figures), each frame's counted in one Spark job.

A job costs the analysis far more in planning and scheduling than its tiny data does: the counts of one frame are
conditional sums of a single aggregation rather than a `count()` job each.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from minikafka.deploy.analysis import group_invariants as groups
from minikafka.deploy.analysis.denied_writes import denied_send
from minikafka.deploy.analysis.history_invariants import in_effect


def _count(condition: Column) -> Column:
    return F.count(F.when(condition, F.lit(1)))


@dataclass(frozen=True)
class EventTallies:
    partition_changes: int  # committed Partition/PartitionChange records (events.committed_partition_changes)
    leaders: int  # become_leader events
    commits: int  # acknowledged group offset commits
    held: int  # KIP-848 members' assignments
    last_stable_offsets: int  # high_watermark_advanced events that carry a last stable offset


def event_tallies(events: DataFrame) -> EventTallies:
    event = F.col("event")
    change = (event == "partition_changed") & F.col("offset").isNotNull()
    row = events.agg(
        F.countDistinct(F.when(change, F.col("offset"))).alias("partition_changes"),
        _count(event == "become_leader").alias("leaders"),
        _count(event == groups.COMMITTED).alias("commits"),
        _count(event == groups.HELD).alias("held"),
        _count((event == "high_watermark_advanced") & F.col("last_stable_offset").isNotNull()).alias(
            "last_stable_offsets"
        ),
    ).collect()[0]
    return EventTallies(**row.asDict())


@dataclass(frozen=True)
class ProducedTallies:
    acknowledged_all: int  # acks=all acknowledged records in effect: what NoCommittedRecordLost checks
    acknowledged: int  # every acknowledged record in effect, whatever its acks
    deleted_with_topic: int  # of the acks=all ones, those of a topic deleted later in the run (deleted_ts set)
    denied_sends: int  # the sends NoDeniedWriteVisible checks (denied_writes.denied_sends)


def produced_tallies(dated: DataFrame) -> ProducedTallies:
    """`dated`: the producer lines with `deleted_ts` (topic_incarnations.acknowledged_topic_ids)."""
    ok = F.col("error").isNull() & F.col("offset").isNotNull() & in_effect()
    acks_all = ok & (F.col("acks") == "all")
    row = dated.agg(
        _count(acks_all).alias("acknowledged_all"),
        _count(ok).alias("acknowledged"),
        _count(acks_all & F.col("deleted_ts").isNotNull()).alias("deleted_with_topic"),
        _count(denied_send()).alias("denied_sends"),
    ).collect()[0]
    return ProducedTallies(**row.asDict())
