"""Invariants over consumer groups: committed offsets never go back within a group, and no group member is
handed a record below an offset the group had already committed (Jepsen's Kafka checker calls that a backwards
poll). Plus the groups' timeline: coordinator moves and new generations."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

COMMITTED = "offset_committed"
GROUP_TIMELINE_EVENTS = ("group_coordinator_loaded", "group_coordinator_unloaded", "group_generation_started")


def _commits(events: DataFrame) -> DataFrame:
    return events.where(F.col("event") == COMMITTED).select(
        "ts", "node", "group", "tp", "offset", "member_id", "generation"
    )


def committed_offsets_monotonic(events: DataFrame) -> DataFrame:
    """Each acknowledged commit of a (group, partition) is at or past the one acknowledged before it, whichever
    broker coordinated the group at the time."""
    order = Window.partitionBy("group", "tp").orderBy("ts")
    return (
        _commits(events)
        .withColumn("previous_offset", F.lag("offset").over(order))
        .withColumn("previous_node", F.lag("node").over(order))
        .where(F.col("offset") < F.col("previous_offset"))
        .orderBy("group", "tp", "ts")
    )


def no_backwards_poll(events: DataFrame, consumed: DataFrame) -> DataFrame:
    """A record a group member consumed (a consume line with `group` and `ts`) is not below an offset the group
    committed for its partition before the member consumed it."""
    polls = consumed.where(F.col("group").isNotNull() & F.col("ts").isNotNull()).select(
        "source",
        "group",
        F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("tp"),
        F.col("offset").alias("consumed_offset"),
        F.to_timestamp("ts").alias("consumed_ts"),
    )
    commits = _commits(events).select(
        "group", "tp", F.col("ts").alias("committed_ts"), F.col("offset").alias("committed_offset")
    )
    return (
        polls.join(commits, ["group", "tp"])
        .where((F.col("committed_ts") < F.col("consumed_ts")) & (F.col("consumed_offset") < F.col("committed_offset")))
        .groupBy("source", "group", "tp", "consumed_offset", "consumed_ts")
        .agg(F.max("committed_offset").alias("committed_before"))
        .orderBy("group", "tp", "consumed_ts")
    )


def group_timeline(events: DataFrame) -> DataFrame:
    """Coordinator loads and unloads (a move is an unload on one broker and a load on another) and new
    generations, in time order."""
    return (
        events.where(F.col("event").isin(*GROUP_TIMELINE_EVENTS))
        .select("ts", "node", "event", "partition", "leader_epoch", "group", "generation", "reason")
        .orderBy("ts")
    )
