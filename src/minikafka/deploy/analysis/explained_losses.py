"""Acknowledged writes lost in ways Kafka's promises allow, told apart from the losses that break them.

- acks=1: a leader acknowledges a write once it is in its own log. If that leader then loses its leadership before
  a follower copied the write (a leader cut off from the others, a zombie, goes on acknowledging), the new leader
  never had it and the old one truncates it when it follows again. Such losses are a warning naming the records,
  the leader epoch and the cut in force when they were acknowledged: the expected cost of acks=1.
- An unclean election (`unclean.leader.election.enable`, `leader-election --election-type unclean`) makes a
  replica from outside the ISR the leader: acknowledged acks=all writes at or above its log end when it became
  leader are gone by choice. They are charged to that election (a warning naming it), not to the protocol.

Every other acknowledged acks=all write a final read covered and did not find stays a NoCommittedRecordLost failure.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.deploy.analysis.timelines import network_cuts
from minikafka.deploy.analysis.topic_incarnations import node_number


def unclean_elections(events: DataFrame) -> DataFrame:
    """(tp, topic_incarnation, elected_at, new_leader, leader_epoch, reason, log_end): each unclean election, with
    the new leader's log end when it began leading (its `become_leader` epoch start offset; null if it never logged
    one)."""
    elections = events.where((F.col("event") == "leader_elected") & F.coalesce("unclean", F.lit(False))).select(
        "tp",
        "topic_incarnation",
        F.col("ts").alias("elected_at"),
        F.col("leader").alias("new_leader"),
        "leader_epoch",
        "reason",
    )
    starts = events.where(F.col("event") == "become_leader").select(
        "tp",
        "topic_incarnation",
        "leader_epoch",
        node_number().alias("new_leader"),
        F.col("leader_epoch_start_offset").alias("log_end"),
    )
    return (
        elections.join(starts, ["tp", "topic_incarnation", "leader_epoch", "new_leader"], "left")
        .groupBy("tp", "topic_incarnation", "new_leader", "leader_epoch", "reason")
        .agg(F.min("elected_at").alias("elected_at"), F.min("log_end").alias("log_end"))
    )


@dataclass(frozen=True)
class LostWrites:
    unexplained: DataFrame  # NoCommittedRecordLost's offending rows
    unclean: DataFrame  # acks=all writes an unclean election discarded, with that election
    acks_one: DataFrame  # acks=1 writes truncated after their leader lost the leadership


def charge_to_unclean_elections(lost: DataFrame, events: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(unexplained, charged): a lost acks=all write is charged to the first unclean election of its partition (of
    the topic incarnation it was acknowledged to, its `topic_incarnation`) after it was acknowledged whose new
    leader's log ended at or below its offset."""
    tp = F.concat_ws("-", "topic", F.col("partition").cast("string"))
    elections = unclean_elections(events).where(F.col("log_end").isNotNull())
    candidates = (
        lost.withColumn("tp", tp)
        .join(elections, ["tp", "topic_incarnation"])
        .where((F.col("elected_at") >= F.col("ts")) & (F.col("offset") >= F.col("log_end")))
    )
    first = candidates.groupBy("topic", "partition", "offset").agg(F.min("elected_at").alias("elected_at"))
    charged = (
        candidates.join(first, ["topic", "partition", "offset", "elected_at"])
        .select(
            "topic",
            "partition",
            "offset",
            "acked_value",
            "ts",
            "elected_at",
            "new_leader",
            "leader_epoch",
            "reason",
            F.col("log_end").alias("new_leader_log_end"),
        )  # fmt: skip
        .orderBy("topic", "partition", "offset")
    )
    unexplained = lost.join(
        charged.select("topic", "partition", "offset"), ["topic", "partition", "offset"], "left_anti"
    ).drop("topic_incarnation")
    return unexplained, charged


def lost_acks_one(lost: DataFrame, events: DataFrame) -> DataFrame:
    """The acks=1 acknowledged writes a final read covered and did not find (`lost`), each with the network cut in
    force when it was acknowledged (null: none)."""
    cuts = network_cuts(events).select("started", "healed", F.col("target").alias("cut"))
    during = (F.col("ts") >= F.col("started")) & (F.col("healed").isNull() | (F.col("ts") <= F.col("healed")))
    with_cut = (
        lost.join(cuts, during, "left")
        .groupBy("topic", "partition", "offset", "acked_value", "ts")
        .agg(F.first("cut", ignorenulls=True).alias("cut_in_force"))
    )
    return with_cut.orderBy("topic", "partition", "offset")


def explain_losses(lost: DataFrame, events: DataFrame) -> LostWrites:
    """`lost`: the acknowledged writes (acks=all and acks=1, column `acks`; `topic_incarnation`, as
    topic_incarnations.acknowledged_topic_ids gives it) a final read covered and did not find."""
    acks_all = lost.where(F.col("acks") == "all").drop("acks")
    unexplained, charged = charge_to_unclean_elections(acks_all, events)
    return LostWrites(unexplained, charged, lost_acks_one(lost.where(F.col("acks") == "1").drop("acks"), events))
