"""Invariants over consumer groups: committed offsets never go back within a group, no group member is handed a
record below an offset the group had already committed (Jepsen's Kafka checker calls that a backwards poll), and
no partition of a KIP-848 group is held by two members at once. Plus the groups' timeline: coordinator moves and
new generations."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

COMMITTED = "offset_committed"
GROUP_TIMELINE_EVENTS = ("group_coordinator_loaded", "group_coordinator_unloaded", "group_generation_started")
HELD = "consumer_group_member_assignment"
OPEN_END = "9999-12-31 00:00:00"  # a span not closed: held to the end of the run
MEMBER_GONE = ("consumer_group_member_left", "consumer_group_member_fenced")


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


def holdings(events: DataFrame) -> DataFrame:
    """Each partition a KIP-848 member held (assigned, or still to revoke) and for how long: from the event that
    gave it to the member's next assignment event, or its leaving or fencing (none yet: to the end of the run)."""
    changes = events.where(F.col("event").isin(HELD, *MEMBER_GONE) & F.col("group_id").isNotNull())
    order = Window.partitionBy("group_id", "member_id").orderBy("ts", "event")
    spans = changes.withColumn("until", F.lead("ts").over(order)).where(F.col("event") == HELD)
    held = F.array_union(
        F.coalesce("assigned", F.array().cast("array<string>")),
        F.coalesce("pending_revocation", F.array().cast("array<string>")),
    )
    return spans.select(
        "group_id",
        "member_id",
        "member_epoch",
        "node",
        F.col("ts").alias("since"),
        "until",
        F.explode(held).alias("tp"),
    )


def no_double_ownership(events: DataFrame) -> DataFrame:
    """No partition of a consumer-protocol group is held by two members at the same time: a partition goes to its
    next owner only after its previous owner acknowledged the revocation (or left, or was fenced)."""
    held = holdings(events).withColumn("until", F.coalesce("until", F.to_timestamp(F.lit(OPEN_END))))
    first, second = held.alias("a"), held.alias("b")
    overlapping = (
        (F.col("a.group_id") == F.col("b.group_id"))
        & (F.col("a.tp") == F.col("b.tp"))
        & (F.col("a.member_id") < F.col("b.member_id"))
        & (F.col("a.since") < F.col("b.until"))
        & (F.col("b.since") < F.col("a.until"))
    )
    return (
        first.join(second, overlapping)
        .select(
            F.col("a.group_id").alias("group_id"),
            F.col("a.tp").alias("tp"),
            F.col("a.member_id").alias("member"),
            F.col("a.member_epoch").alias("member_epoch"),
            F.col("a.since").alias("member_since"),
            F.col("a.until").alias("member_until"),
            F.col("b.member_id").alias("other"),
            F.col("b.member_epoch").alias("other_epoch"),
            F.col("b.since").alias("other_since"),
            F.col("b.until").alias("other_until"),
        )
        .orderBy("group_id", "tp", "member_since")
    )
