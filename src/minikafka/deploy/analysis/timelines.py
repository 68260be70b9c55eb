"""What happened over time: leader, ISR and replica set per partition, broker states, controller leadership,
faults, network cuts (each from its cut to its heal), and the incidents the nodes logged: log dirs taken offline,
corrupt batches, replica-set changes (reassignments, deletions), unclean elections, a halted controller."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
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
            "adding_replicas",
            "removing_replicas",
            "leader_epoch",
            "partition_epoch",
            "reason",
        )  # fmt: skip
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


def controller_elections(events: DataFrame) -> DataFrame:
    """Each KRaft election with its leaderless time: from the earliest `raft_resigned` of an older epoch since the
    election before (a leader that resigned, lost its quorum or was displaced by a higher epoch) to this election.
    Null when no resignation was logged in between: the first election, or one after a leader that crashed."""
    elections = controller_leadership(events)
    before = F.lag("ts").over(Window.orderBy("epoch"))
    elections = elections.withColumn("previous_ts", before)
    resigned = events.where(F.col("event") == "raft_resigned").select(
        F.col("ts").alias("resigned_ts"), F.col("epoch").alias("resigned_epoch")
    )
    joined = elections.join(
        resigned,
        (resigned.resigned_epoch < elections.epoch)
        & (resigned.resigned_ts <= elections.ts)
        & (elections.previous_ts.isNull() | (resigned.resigned_ts >= elections.previous_ts)),
        "left",
    )
    return (
        joined.groupBy("epoch", "ts", "leader")
        .agg(F.min("resigned_ts").alias("resigned_ts"))
        .withColumn("leaderless_ms", (F.col("ts").cast("double") - F.col("resigned_ts").cast("double")) * 1000)
        .select("epoch", "ts", "leader", "leaderless_ms")
        .orderBy("epoch")
    )


def fault_markers(events: DataFrame) -> DataFrame:
    return (
        events.where(F.col("event") == "fault_injected")
        .select("ts", "fault", "target", "target_id", "role", "lose_unflushed", "wipe_disk")
        .orderBy("ts")
    )


CUT_FAULTS = ("partition", "isolate")


def network_cuts(events: DataFrame) -> DataFrame:
    """Each network cut (`fault partition`/`isolate`) from when it was made to the first heal that removed it: a
    heal of every cut, or one naming a node of its groups (healed null: never healed in the run)."""
    faults = events.where(F.col("event") == "fault_injected")
    cuts = faults.where(F.col("fault").isin(*CUT_FAULTS)).select(
        F.col("ts").alias("started"), "fault", "target", F.col("from").alias("from_ids"),
        F.col("to").alias("to_ids"), F.coalesce("one_way", F.lit(False)).alias("one_way"),
    )  # fmt: skip
    heals = faults.where(F.col("fault") == "heal").select(F.col("ts").alias("heal_ts"), F.col("nodes").alias("named"))
    no_ids = F.array().cast("array<int>")
    involved = F.concat(F.coalesce("from_ids", no_ids), F.coalesce("to_ids", no_ids))
    removes = (F.col("heal_ts") >= F.col("started")) & (
        (F.coalesce(F.size("named"), F.lit(0)) <= 0) | F.arrays_overlap("named", involved)
    )
    return (
        cuts.join(heals, removes, "left")
        .groupBy("started", "fault", "target", "from_ids", "to_ids", "one_way")
        .agg(F.min("heal_ts").alias("healed"))
        .withColumn("seconds", F.round(F.col("healed").cast("double") - F.col("started").cast("double"), 3))
        .orderBy("started")
    )


# What each incident is, by its event (docs/events.md); the replay-time ones, logged by every node that replays
# the record, are kept once.
INCIDENT_KINDS = {
    "log_dir_offline": "storage",
    "log_batch_corrupt": "storage",
    "follower_partition_failed": "storage",
    "metadata_log_write_failed": "storage",
    "controller_halted": "storage",
    "reassignment_started": "replica set",
    "reassignment_completed": "replica set",
    "reassignment_cancelled": "replica set",
    "topic_deleted": "replica set",
    "log_deleted": "replica set",
    "stray_partition_deleted": "replica set",
    "leader_elected": "unclean election",
}
INCIDENT_DETAIL = (
    "topic", "topic_id", "log_dir", "reason", "error", "offset", "fetch_offset", "leader", "leader_epoch",
    "replicas", "target_replicas", "original_replicas", "added", "removed", "directory",
)  # fmt: skip


def incidents(events: DataFrame) -> DataFrame:
    """(ts, kind, event, node, tp, detail): storage failures, replica-set changes and unclean elections, in time
    order; `detail` is the event's fields as JSON (nulls left out)."""
    kind = F.create_map(*[F.lit(x) for pair in INCIDENT_KINDS.items() for x in pair])[F.col("event")]
    chosen = events.where(
        F.col("event").isin(*INCIDENT_KINDS)
        & ((F.col("event") != "leader_elected") | F.coalesce("unclean", F.lit(False)))
    )
    # A committed record's replay event (with its metadata offset) is the same incident on every node.
    who = F.when(F.col("event") == "topic_deleted", F.lit("controllers")).otherwise(F.col("node"))
    return (
        chosen.select(
            "ts",
            kind.alias("kind"),
            "event",
            who.alias("node"),
            "tp",
            F.to_json(F.struct(*INCIDENT_DETAIL)).alias("detail"),
        )  # fmt: skip
        .groupBy("kind", "event", "node", "tp", "detail")
        .agg(F.min("ts").alias("ts"))
        .select("ts", "kind", "event", "node", "tp", "detail")
        .orderBy("ts", "event", "node")
    )
