"""What happened over time: leader and ISR per partition, broker states, controller leadership, faults."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from minikafka.deploy.analysis.events import committed_partition_changes

BROKER_STATE_EVENTS = {
    "broker_registered": "registered",
    "broker_unfenced": "unfenced",
    "broker_fenced": "fenced",
    "controlled_shutdown_requested": "shutting_down",
}


def partition_timeline(events: DataFrame) -> DataFrame:
    """Each committed partition state in metadata log order: when, leader, ISR, ELR, epochs, why."""
    return (
        committed_partition_changes(events)
        .select(
            "offset",
            "ts",
            "tp",
            "leader",
            "isr",
            "elr",
            "last_known_elr",
            "replicas",
            "leader_epoch",
            "partition_epoch",
            "reason",
        )
        .orderBy("offset")
    )


def broker_states(events: DataFrame) -> DataFrame:
    """Each committed broker state change (registration, fencing, unfencing, controlled shutdown) once, with the
    reason; changes for a broker epoch that was no longer current (`applied` false) are left out."""
    state = F.create_map(*[F.lit(x) for pair in BROKER_STATE_EVENTS.items() for x in pair])[F.col("event")]
    return (
        events.where(
            F.col("event").isin(*BROKER_STATE_EVENTS)
            & F.col("offset").isNotNull()
            & F.coalesce(F.col("applied"), F.lit(True))
        )
        .groupBy("offset")
        .agg(
            F.min("ts").alias("ts"),
            F.first("broker_id").alias("broker_id"),
            F.first("broker_epoch").alias("broker_epoch"),
            F.first(state).alias("state"),
            F.first("reason").alias("reason"),
        )
        .orderBy("offset")
    )


def controller_leadership(events: DataFrame) -> DataFrame:
    """Each KRaft epoch with its leader and when it was elected."""
    return (
        events.where(F.col("event") == "raft_leader_elected")
        .groupBy("epoch")
        .agg(F.min("ts").alias("ts"), F.first("leader").alias("leader"))
        .orderBy("epoch")
    )


def fault_markers(events: DataFrame) -> DataFrame:
    return (
        events.where(F.col("event") == "fault_injected")
        .select("ts", "fault", "target", "target_id", "role", "lose_unflushed", "wipe_disk")
        .orderBy("ts")
    )
