"""Invariants over the committed cluster metadata and the Raft quorum, read from the controllers' replay events.

Each function takes the events DataFrame (deploy.analysis.events.load_events) and returns the offending rows.
Names follow Kafka's TLA+ specification of replication.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.deploy.analysis.events import committed_broker_registrations, committed_partition_changes
from minikafka.deploy.analysis.topic_incarnations import node_number
from minikafka.kraft_controller.control.record_events import RECORD_IDENTITY_FIELDS


def isr_never_empty(events: DataFrame) -> DataFrame:
    """A committed partition state always keeps at least one ISR member (the last replica standing); with KIP-966
    the ISR may empty, but then the ELR or LastKnownElr still names who may lead."""
    changes = committed_partition_changes(events)
    empty = (F.size("isr") == 0) & (F.size("elr") == 0) & (F.size("last_known_elr") == 0)
    return changes.where(empty).select("offset", "ts", "tp", "leader", "isr", "elr", "reason").orderBy("offset")


def unclean_registrations(events: DataFrame) -> DataFrame:
    """(broker_id, registration offset) of each committed registration by an incarnation that started without a
    clean-shutdown record: its unflushed tail may be gone."""
    starts = events.where(F.col("event") == "broker_starting").select(
        F.regexp_extract("node", r"^broker-(\d+)$", 1).cast("int").alias("start_broker"),
        F.col("ts").alias("start_ts"),
        F.coalesce(F.col("previous_broker_epoch"), F.lit(-1)).alias("previous_broker_epoch"),
    )
    latest = Window.partitionBy("offset").orderBy(F.col("start_ts").desc())
    return (
        committed_broker_registrations(events)
        .join(starts, (F.col("start_broker") == F.col("broker_id")) & (F.col("start_ts") <= F.col("ts")))
        .withColumn("n", F.row_number().over(latest))
        .where((F.col("n") == 1) & (F.col("previous_broker_epoch") < 0))
        .select("broker_id", F.col("offset").alias("registration_offset"))
    )


def elr_members_complete(events: DataFrame) -> DataFrame:
    """KIP-966: every ELR member holds every record below the HWM. A member takes them with it from the ISR it
    left below min ISR; only an unclean restart can lose them, so a broker registered after one is in no committed
    ELR until it is back in an ISR (an ELR member elected leader is held to LeaderCandidateCompleteness too)."""
    changes = committed_partition_changes(events).select("offset", "ts", "tp", "isr", "elr")
    unclean = unclean_registrations(events)
    listed = changes.join(
        unclean, F.array_contains("elr", F.col("broker_id")) & (F.col("offset") > F.col("registration_offset"))
    )
    rejoined = (
        changes.select(
            F.col("offset").alias("isr_offset"), F.col("tp").alias("isr_tp"), F.col("isr").alias("member_of")
        )
        .join(
            unclean.select(F.col("broker_id").alias("member"), F.col("registration_offset").alias("since")),
            F.array_contains("member_of", F.col("member")),
        )
        .where(F.col("isr_offset") > F.col("since"))
    )
    cleared = listed.join(
        rejoined,
        (F.col("isr_tp") == F.col("tp"))
        & (F.col("member") == F.col("broker_id"))
        & (F.col("since") == F.col("registration_offset"))
        & (F.col("isr_offset") <= F.col("offset")),
        "left_anti",
    )
    return cleared.select("offset", "ts", "tp", "broker_id", "registration_offset", "isr", "elr").orderBy("offset")


def leader_in_isr_and_replicas(events: DataFrame) -> DataFrame:
    """A committed leader is in the ISR and in the replicas, and the ISR is a subset of the replicas."""
    changes = committed_partition_changes(events)
    leader_outside = (F.col("leader") >= 0) & (
        ~F.array_contains("isr", F.col("leader")) | ~F.array_contains("replicas", F.col("leader"))
    )
    isr_outside = F.size(F.array_except("isr", "replicas")) > 0
    return (
        changes.where(leader_outside | isr_outside)
        .select("offset", "ts", "tp", "leader", "isr", "replicas", "leader_epoch", "reason")
        .orderBy("offset")
    )


def one_leader_per_leader_epoch(events: DataFrame) -> DataFrame:
    """One leader per (partition, leader epoch): in the committed metadata, and among the brokers that acted as
    leader (`become_leader`), whose leader must be the one the metadata committed for that epoch. A topic deleted and
    created again starts its epochs over: each incarnation (topic id) is checked apart."""
    changes = committed_partition_changes(events)
    keys = ["tp", "topic_incarnation", "leader_epoch"]
    committed = (
        changes.groupBy(*keys)
        .agg(F.sort_array(F.collect_set("leader")).alias("leaders"))
        .where(F.size("leaders") > 1)
        .select(F.lit("metadata").alias("source"), *keys, "leaders")
    )
    acting = events.where(F.col("event") == "become_leader").select(*keys, node_number().alias("leader"))
    brokers = (
        acting.groupBy(*keys)
        .agg(F.sort_array(F.collect_set("leader")).alias("leaders"))
        .where(F.size("leaders") > 1)
        .select(F.lit("brokers").alias("source"), *keys, "leaders")
    )
    # A broker leading in an epoch for which the metadata committed a different leader.
    committed_leaders = changes.select(*keys, F.col("leader").alias("committed_leader")).distinct()
    disagreeing = (
        acting.distinct()
        .join(committed_leaders, keys)
        .groupBy(*keys, "leader")
        .agg(F.collect_set("committed_leader").alias("committed"))
        .where(~F.array_contains("committed", F.col("leader")))
        .select(
            F.lit("broker_vs_metadata").alias("source"),
            *keys,
            F.sort_array(F.array_union(F.array("leader"), "committed")).alias("leaders"),
        )
    )
    return committed.unionByName(brokers).unionByName(disagreeing).orderBy(*keys, "source")


def epochs_monotonic(events: DataFrame) -> DataFrame:
    """In metadata log order a partition's leader epoch never decreases and its partition epoch strictly
    increases; on each broker incarnation the leader epochs it adopts never decrease."""
    changes = committed_partition_changes(events)
    # A topic deleted and created again under the same name starts its epochs over: compare within one topic id.
    by_offset = Window.partitionBy("topic_id", "tp").orderBy("offset")
    metadata = (
        changes.withColumn("previous_leader_epoch", F.lag("leader_epoch").over(by_offset))
        .withColumn("previous_partition_epoch", F.lag("partition_epoch").over(by_offset))
        .where(
            (F.col("leader_epoch") < F.col("previous_leader_epoch"))
            | (F.col("partition_epoch") <= F.col("previous_partition_epoch"))
        )
        .select(
            F.lit("metadata").alias("source"),
            "tp",
            F.col("offset").cast("string").alias("position"),
            "previous_leader_epoch",
            "leader_epoch",
            "previous_partition_epoch",
            "partition_epoch",
        )
    )
    brokers = _adopted_epochs_decreasing(events)
    return metadata.unionByName(brokers).orderBy("source", "tp", "position")


def _adopted_epochs_decreasing(events: DataFrame) -> DataFrame:
    """Each broker incarnation's become_leader/become_follower whose epochs go back. A log the broker deleted
    (its topic deleted, or a stray) ends a generation: a re-created topic's epochs start over after it."""
    roles = ("become_leader", "become_follower")
    deletions = ("log_deleted", "stray_partition_deleted")
    marked = events.where(F.col("event").isin(*roles, *deletions)).withColumn(
        "generation",
        F.sum(F.col("event").isin(*deletions).cast("int")).over(
            Window.partitionBy("node", "incarnation", "tp").orderBy("ts").rowsBetween(Window.unboundedPreceding, 0)
        ),
    )
    adopted = marked.where(F.col("event").isin(*roles))
    by_time = Window.partitionBy("node", "incarnation", "tp", "generation").orderBy("ts")
    return (
        adopted.withColumn("previous_leader_epoch", F.lag("leader_epoch").over(by_time))
        .withColumn("previous_partition_epoch", F.lag("partition_epoch").over(by_time))
        .where(
            (F.col("leader_epoch") < F.col("previous_leader_epoch"))
            | (F.col("partition_epoch") < F.col("previous_partition_epoch"))
        )
        .select(
            F.lit("broker").alias("source"),
            "tp",
            F.concat_ws("@", "node", F.col("ts").cast("string")).alias("position"),
            "previous_leader_epoch",
            "leader_epoch",
            "previous_partition_epoch",
            "partition_epoch",
        )
    )


def metadata_log_matching(events: DataFrame) -> DataFrame:
    """Every controller that replayed the metadata record at an offset saw the same record. The Raft layer's events
    at an offset (a VotersRecord appended, a voter set changed) are about its control records, not replays."""
    replayed = events.where(
        F.col("offset").isNotNull() & F.col("node").startswith("controller-") & ~F.col("event").startswith("raft_")
    )
    fingerprinted = replayed.withColumn("record", F.to_json(F.struct(*RECORD_IDENTITY_FIELDS)))
    return (
        fingerprinted.groupBy("offset")
        .agg(
            F.collect_set("record").alias("records"),
            F.sort_array(F.collect_set("node")).alias("nodes"),
        )
        .where(F.size("records") > 1)
        .orderBy("offset")
    )


def one_raft_leader_per_epoch(events: DataFrame) -> DataFrame:
    """Election safety: at most one KRaft leader per epoch, as elected or discovered by any node."""
    leaders = events.where(
        F.col("event").isin("raft_leader_elected", "raft_leader_discovered") & (F.col("leader") >= 0)
    )
    return (
        leaders.groupBy("epoch")
        .agg(
            F.sort_array(F.collect_set("leader")).alias("leaders"), F.sort_array(F.collect_set("node")).alias("seen_by")
        )
        .where(F.size("leaders") > 1)
        .orderBy("epoch")
    )


def stale_broker_epoch_in_isr(events: DataFrame) -> DataFrame:
    """KIP-903: no ISR committed by AlterPartition contains a member whose broker epoch, as the leader sent it,
    is not that broker's registration committed before the change (a broker that rebooted in between)."""
    changes = committed_partition_changes(events).where(F.col("reason") == "alter_partition")
    accepted = (
        events.where((F.col("event") == "alter_partition_accepted") & F.col("changed"))
        .select(
            "topic_id",
            F.col("partition").alias("partition_index"),
            "partition_epoch",
            "isr",
            F.explode("proposed_isr").alias("member"),
        )
        .select(
            "topic_id",
            "partition_index",
            "partition_epoch",
            "isr",
            F.col("member")[0].cast("int").alias("broker_id"),
            F.col("member")[1].alias("requested_broker_epoch"),
        )
        .distinct()
    )
    committed = changes.select(
        "offset",
        "ts",
        "tp",
        "topic_id",
        F.regexp_extract("tp", r"-(\d+)$", 1).alias("partition_index"),
        "partition_epoch",
        "isr",
    )
    # A member sent with epoch -1 has not fetched from the leader yet: the leader vouches for no epoch and the
    # controller skips the check (Kafka's rule); it stays in the ISR it was already in, so it is no stale admission.
    members = committed.join(accepted, ["topic_id", "partition_index", "partition_epoch", "isr"]).where(
        F.array_contains("isr", F.col("broker_id")) & (F.col("requested_broker_epoch") != -1)
    )
    registrations = committed_broker_registrations(events).select(
        F.col("offset").alias("registration_offset"), "broker_id", F.col("broker_epoch").alias("registered_epoch")
    )
    current = (
        members.join(registrations, "broker_id", "left")
        .where(F.col("registration_offset").isNull() | (F.col("registration_offset") < F.col("offset")))
        .groupBy("offset", "ts", "tp", "partition_epoch", "isr", "broker_id", "requested_broker_epoch")
        .agg(F.max_by("registered_epoch", "registration_offset").alias("current_broker_epoch"))
    )
    return (
        current.where(
            F.col("current_broker_epoch").isNull() | (F.col("current_broker_epoch") != F.col("requested_broker_epoch"))
        )
        .select(
            "offset",
            "ts",
            "tp",
            "partition_epoch",
            "isr",
            "broker_id",
            "requested_broker_epoch",
            "current_broker_epoch",
        )
        .orderBy("offset", "broker_id")
    )
