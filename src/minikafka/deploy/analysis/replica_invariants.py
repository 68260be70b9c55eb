"""Invariants over what the brokers did as leaders: high watermarks and the completeness of new leaders."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.deploy.analysis.history_invariants import acknowledged


def high_watermark_monotonic(events: DataFrame) -> DataFrame:
    """A leader's HWM never goes back within its leader epoch (`high_watermark_advanced`, coalesced). Per process
    incarnation: a broker restarted from an old image re-adopts a stale epoch while fenced, with the HWM of its
    checkpoint, and serves nothing until the controller moved leadership. Per topic id: a topic deleted and created
    again starts over from offset 0 in leader epoch 0."""
    advanced = events.where(F.col("event") == "high_watermark_advanced")
    order = Window.partitionBy("node", "incarnation", "tp", "topic_incarnation", "leader_epoch").orderBy("ts")
    return (
        advanced.withColumn("previous_high_watermark", F.lag("high_watermark").over(order))
        .where(F.col("high_watermark") < F.col("previous_high_watermark"))
        .select("ts", "node", "tp", "leader_epoch", "previous_high_watermark", "high_watermark")
        .orderBy("tp", "ts")
    )


def high_watermark_evidence(events: DataFrame, dated: DataFrame) -> DataFrame:
    """(tp, topic_incarnation, ts, leader_epoch or null, high_watermark): every point where some HWM was known to be
    reached, from the leaders' events and from acks=all acknowledgements (an ack at offset o means the HWM passed
    o). `dated`: the producer lines with their topic incarnation (topic_incarnations.acknowledged_topic_ids)."""
    logged = events.where(F.col("event") == "high_watermark_advanced").select(
        "tp", "topic_incarnation", "ts", "leader_epoch", "high_watermark"
    )
    acked = acknowledged(dated).select(
        F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("tp"),
        "topic_incarnation",
        "ts",
        F.lit(None).cast("int").alias("leader_epoch"),
        (F.col("offset") + 1).alias("high_watermark"),
    )
    return logged.unionByName(acked)


def leader_completeness(events: DataFrame, dated: DataFrame) -> DataFrame:
    """LeaderCandidateCompleteness: a new leader's log ends at or past every HWM reached before it led: HWMs of
    earlier leader epochs, and acknowledgements received before it became leader. Only the first
    `become_leader` of each (partition, leader epoch) counts (see high_watermark_monotonic). An unclean election
    gives up what came before it by choice (its losses are UncleanElectionLoss): from its leader epoch on, only
    HWMs reached since count. A topic deleted and created again is a new topic: only its own HWMs count."""
    first = Window.partitionBy("tp", "topic_incarnation", "leader_epoch").orderBy("ts")
    leaders = (
        events.where(F.col("event") == "become_leader")
        .withColumn("n", F.row_number().over(first))
        .where(F.col("n") == 1)
        .select(
            "tp",
            "topic_incarnation",
            F.col("ts").alias("became_leader_ts"),
            "node",
            F.col("leader_epoch").alias("new_leader_epoch"),
            "leader_epoch_start_offset",
        )
    )
    leaders = _since_unclean_election(leaders, events)
    evidence = high_watermark_evidence(events, dated).withColumnsRenamed(
        {"tp": "_tp", "topic_incarnation": "_topic_incarnation"}
    )
    since_reset = (
        F.col("reset_epoch").isNull()
        | (F.col("leader_epoch") >= F.col("reset_epoch"))
        | (F.col("leader_epoch").isNull() & (F.col("ts") >= F.col("reset_ts")))
    )
    same_topic = (F.col("tp") == F.col("_tp")) & (F.col("topic_incarnation") == F.col("_topic_incarnation"))
    earlier = leaders.join(evidence, same_topic).where(
        F.when(F.col("leader_epoch").isNotNull(), F.col("leader_epoch") < F.col("new_leader_epoch")).otherwise(
            F.col("ts") < F.col("became_leader_ts")
        )
        & since_reset
    )
    return (
        earlier.groupBy(
            "tp", "topic_incarnation", "became_leader_ts", "node", "new_leader_epoch", "leader_epoch_start_offset"
        )
        .agg(F.max("high_watermark").alias("high_watermark_reached_before"))
        .where(F.col("leader_epoch_start_offset") < F.col("high_watermark_reached_before"))
        .orderBy("tp", "new_leader_epoch")
    )


def _since_unclean_election(leaders: DataFrame, events: DataFrame) -> DataFrame:
    """`leaders` with reset_epoch / reset_ts: the leader epoch and time of the latest unclean election of the
    partition at or before each leader's epoch (null: none)."""
    unclean = events.where((F.col("event") == "leader_elected") & F.coalesce("unclean", F.lit(False))).select(
        "tp", "topic_incarnation", F.col("leader_epoch").alias("unclean_epoch"), F.col("ts").alias("unclean_ts")
    )
    keys = ["tp", "topic_incarnation", "new_leader_epoch"]
    resets = (
        leaders.select(*keys)
        .join(unclean, ["tp", "topic_incarnation"])
        .where(F.col("unclean_epoch") <= F.col("new_leader_epoch"))
        .groupBy(*keys)
        .agg(F.max("unclean_epoch").alias("reset_epoch"), F.max("unclean_ts").alias("reset_ts"))
    )
    return leaders.join(resets, keys, "left")
