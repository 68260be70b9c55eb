"""Failover: for each leader lost to a fault, how long until it was fenced, a new leader was committed, and the
first acknowledged write to the partition after the fault; for each controller leader lost, the next election."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.deploy.analysis.events import committed_partition_changes
from minikafka.deploy.analysis.timelines import broker_states

# Faults that take a broker away (a start or resume brings one back).
LEADER_LOSING_FAULTS = ("kill", "reboot", "pause", "stop")
BROKER_FAILOVER_COLUMNS = (
    "fault_ts", "fault", "target", "tp", "lost_leader_epoch", "new_leader", "fence_ms", "new_leader_ms", "first_ack_ms"
)  # fmt: skip
CONTROLLER_FAILOVER_COLUMNS = ("fault_ts", "fault", "target", "lost_epoch", "new_epoch", "new_leader", "election_ms")


def _ms_since(later: str, earlier: str) -> F.Column:
    return (F.col(later).cast("double") - F.col(earlier).cast("double")) * 1000


def broker_failovers(events: DataFrame, produced: DataFrame) -> DataFrame:
    """One row per leader lost to a fault (a partition the target led when it was hit, fenced or replaced before the
    target's next fault): fence_ms, new_leader_ms, first_ack_ms. A fault shorter than the session timeout (a short
    pause) loses no leader: the next fault's fencing is not credited to it."""
    changes = committed_partition_changes(events)
    led = _leaderships_hit(events, changes)
    with_leader = _with_successor(_with_fence(led, events), changes)
    acks = produced.where(F.col("error").isNull() & F.col("offset").isNotNull()).select(
        F.concat_ws("-", "topic", F.col("partition").cast("string")).alias("ack_tp"), F.col("ts").alias("ack_ts")
    )
    with_ack = (
        with_leader.join(acks, (acks.ack_tp == with_leader.tp) & (acks.ack_ts > with_leader.fault_ts), "left")
        .groupBy(*with_leader.columns)
        .agg(F.min("ack_ts").alias("first_ack_ts"))
    )
    return (
        with_ack.withColumn("fence_ms", _ms_since("fenced_ts", "fault_ts"))
        .withColumn("new_leader_ms", _ms_since("leader_ts", "fault_ts"))
        .withColumn("first_ack_ms", _ms_since("first_ack_ts", "fault_ts"))
        .select(*BROKER_FAILOVER_COLUMNS)
        .orderBy("fault_ts", "tp")
    )


def _leaderships_hit(events: DataFrame, changes: DataFrame) -> DataFrame:
    """Each partition a leader-losing fault's target led when it was hit, until the target's next fault."""
    next_fault = Window.partitionBy("target").orderBy("fault_ts")
    hits = (
        events.where(
            (F.col("event") == "fault_injected")
            & (F.col("role") == "broker")
            & F.col("fault").isin(*LEADER_LOSING_FAULTS)
        )
        .select(F.col("ts").alias("fault_ts"), "fault", "target", F.col("target_id").alias("broker_id"))
        .withColumn("until_ts", F.coalesce(F.lead("fault_ts").over(next_fault), F.lit("9999-12-31").cast("timestamp")))
    )
    # The partition states in force when the fault hit: the last committed change before it.
    latest = Window.partitionBy("fault_ts", "tp").orderBy(F.col("offset").desc())
    return (
        hits.join(changes, changes.ts <= hits.fault_ts)
        .withColumn("n", F.row_number().over(latest))
        .where((F.col("n") == 1) & (F.col("leader") == F.col("broker_id")))
        .select(
            "fault_ts",
            "until_ts",
            "fault",
            "target",
            "broker_id",
            "tp",
            F.col("leader_epoch").alias("lost_leader_epoch"),
        )
    )


def _with_fence(led: DataFrame, events: DataFrame) -> DataFrame:
    """fenced_ts: the target's first fence after the fault, before its next fault."""
    fenced = (
        broker_states(events)
        .where(F.col("state") == "fenced")
        .select(F.col("ts").alias("fenced_ts"), F.col("broker_id").alias("fenced_broker"))
    )
    return (
        led.join(
            fenced,
            (fenced.fenced_broker == led.broker_id)
            & (fenced.fenced_ts > led.fault_ts)
            & (fenced.fenced_ts < led.until_ts),
            "left",
        )
        .groupBy("fault_ts", "until_ts", "fault", "target", "broker_id", "tp", "lost_leader_epoch")
        .agg(F.min("fenced_ts").alias("fenced_ts"))
    )


def _with_successor(with_fence: DataFrame, changes: DataFrame) -> DataFrame:
    """leader_ts and new_leader: the first other broker to lead the partition; rows with neither are dropped."""
    successors = changes.select(
        F.col("tp").alias("next_tp"), F.col("ts").alias("leader_ts"), F.col("leader").alias("new_leader")
    )
    return (
        with_fence.join(
            successors,
            (successors.next_tp == with_fence.tp)
            & (successors.leader_ts > with_fence.fault_ts)
            & (successors.leader_ts < with_fence.until_ts)
            & (successors.new_leader >= 0)
            & (successors.new_leader != with_fence.broker_id),
            "left",
        )
        .groupBy("fault_ts", "until_ts", "fault", "target", "broker_id", "tp", "lost_leader_epoch", "fenced_ts")
        .agg(F.min("leader_ts").alias("leader_ts"), F.min_by("new_leader", "leader_ts").alias("new_leader"))
        .where(F.col("fenced_ts").isNotNull() | F.col("leader_ts").isNotNull())
    )


def controller_failovers(events: DataFrame) -> DataFrame:
    """One row per fault that hit the KRaft leader: the next epoch's leader and how long its election took."""
    elected = (
        events.where(F.col("event") == "raft_leader_elected")
        .groupBy("epoch")
        .agg(F.min("ts").alias("elected_ts"), F.first("leader").alias("leader"))
    )
    hits = events.where(
        (F.col("event") == "fault_injected")
        & (F.col("role") == "controller")
        & F.col("fault").isin(*LEADER_LOSING_FAULTS)
    ).select(F.col("ts").alias("fault_ts"), "fault", "target", "target_id")
    latest = Window.partitionBy("fault_ts").orderBy(F.col("epoch").desc())
    leading = (
        hits.join(elected, elected.elected_ts <= hits.fault_ts)
        .withColumn("n", F.row_number().over(latest))
        .where((F.col("n") == 1) & (F.col("leader") == F.col("target_id")))
        .select("fault_ts", "fault", "target", F.col("epoch").alias("lost_epoch"))
    )
    after = elected.select(
        F.col("epoch").alias("new_epoch"), F.col("elected_ts").alias("new_ts"), F.col("leader").alias("new_leader")
    )
    return (
        leading.join(after, (after.new_epoch > leading.lost_epoch) & (after.new_ts > leading.fault_ts), "left")
        .groupBy("fault_ts", "fault", "target", "lost_epoch")
        .agg(
            F.min("new_epoch").alias("new_epoch"),
            F.min_by("new_leader", "new_epoch").alias("new_leader"),
            F.min("new_ts").alias("new_ts"),
        )
        .withColumn("election_ms", _ms_since("new_ts", "fault_ts"))
        .select(*CONTROLLER_FAILOVER_COLUMNS)
        .orderBy("fault_ts")
    )
