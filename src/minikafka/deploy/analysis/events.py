"""Every process's event log (`RUN/logs/*.jsonl`, docs/events.md) as one DataFrame, and views derived from it.

The schema is the union of the fields the jobs read; a field absent from an event is null. `partition` is an
index in the controller's events and a `<topic>-<index>` label in the broker's, so both are read as strings and
`tp` is the label for every event that names a partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from minikafka.deploy.analysis.malformed import Loaded, Shape, read_json
from minikafka.deploy.analysis.topic_incarnations import TopicHistory, topic_history, with_topic_incarnations

EVENT_FIELDS: list[StructField] = [
    StructField("ts", StringType()),
    StructField("node", StringType()),
    StructField("level", StringType()),
    StructField("event", StringType()),
    # metadata replay (controllers), partition and broker state
    StructField("offset", LongType()),
    StructField("topic", StringType()),
    StructField("topic_id", StringType()),
    StructField("partition", StringType()),
    StructField("leader", IntegerType()),
    StructField("previous_leader", IntegerType()),
    StructField("isr", ArrayType(IntegerType())),
    StructField("elr", ArrayType(IntegerType())),  # KIP-966
    StructField("last_known_elr", ArrayType(IntegerType())),
    StructField("previous_broker_epoch", LongType()),  # broker_starting: set after a clean shutdown, else -1
    StructField("replicas", ArrayType(IntegerType())),
    StructField("leader_epoch", IntegerType()),
    StructField("partition_epoch", IntegerType()),
    StructField("reason", StringType()),
    StructField("broker_id", IntegerType()),
    StructField("broker_epoch", LongType()),
    StructField("applied", BooleanType()),
    StructField("changed", BooleanType()),
    StructField("proposed_isr", ArrayType(ArrayType(LongType()))),
    StructField("error", StringType()),
    # raft
    StructField("raft_node", IntegerType()),
    StructField("epoch", IntegerType()),
    StructField("candidate", IntegerType()),
    # replica state
    StructField("high_watermark", LongType()),
    StructField("last_stable_offset", LongType()),  # high_watermark_advanced
    StructField("log_end_offset", LongType()),
    StructField("leader_epoch_start_offset", LongType()),
    # faults
    StructField("fault", StringType()),
    StructField("target", StringType()),
    StructField("target_id", IntegerType()),
    StructField("role", StringType()),
    StructField("lose_unflushed", BooleanType()),
    StructField("wipe_disk", BooleanType()),
    # consumer groups (`offset` above is the committed offset of `offset_committed`)
    StructField("group", StringType()),
    StructField("member_id", StringType()),
    StructField("generation", IntegerType()),
    StructField("previous_offset", LongType()),
    # KIP-848 consumer groups: what a member holds (consumer_group_member_assignment), until it leaves or is fenced
    StructField("group_id", StringType()),
    StructField("member_epoch", IntegerType()),
    StructField("assigned", ArrayType(StringType())),
    StructField("pending_revocation", ArrayType(StringType())),
    # network cuts: a cut's groups, and the nodes a heal names (none: every cut)
    StructField("from", ArrayType(IntegerType())),
    StructField("to", ArrayType(IntegerType())),
    StructField("one_way", BooleanType()),
    StructField("nodes", ArrayType(IntegerType())),
    # elections and replica-set changes
    StructField("unclean", BooleanType()),
    StructField("election_type", StringType()),
    StructField("adding_replicas", ArrayType(IntegerType())),
    StructField("removing_replicas", ArrayType(IntegerType())),
    StructField("target_replicas", ArrayType(IntegerType())),
    StructField("original_replicas", ArrayType(IntegerType())),
    StructField("added", ArrayType(IntegerType())),
    StructField("removed", ArrayType(IntegerType())),
    # storage
    StructField("log_dir", StringType()),
    StructField("directory", StringType()),
    StructField("fetch_offset", LongType()),
    # log compaction (log_cleaned) and config records (topic_config_changed: name, value)
    StructField("bytes_before", LongType()),
    StructField("bytes_after", LongType()),
    StructField("records_before", LongType()),
    StructField("records_after", LongType()),
    StructField("tombstones_removed", LongType()),
    StructField("duration_ms", LongType()),
    StructField("name", StringType()),
    StructField("value", StringType()),
    # ACL denials of client requests (authorization_failed)
    StructField("principal", StringType()),
    StructField("host", StringType()),
    StructField("operation", StringType()),
    StructField("resource_type", StringType()),
    StructField("resource_name", StringType()),
]
EVENT_SCHEMA = StructType(EVENT_FIELDS)

# Process start events: each one begins a new incarnation of its node (a restart appends to the same file).
START_EVENTS = ("broker_starting", "controller_started")


EVENT_SHAPE = Shape(required=("event", "node"), timestamps=("ts",))


@dataclass(frozen=True)
class LoadedEvents(Loaded):
    topics: TopicHistory  # the topic incarnations `topic_incarnation` was given from, for the checks to reuse


def read_events(spark: SparkSession, run_dir: Path) -> LoadedEvents:
    """The well-formed events (as load_events) and the malformed lines (a process killed mid-write tears one)."""
    loaded = read_json(spark, sorted((run_dir / "logs").glob("*.jsonl")), EVENT_SCHEMA, EVENT_SHAPE)
    frame = loaded.rows.drop("file").withColumn(
        "tp",
        F.when(F.col("partition").isNull(), F.lit(None))
        .when(F.col("partition").rlike(r"^\d+$") & F.col("topic").isNotNull(), F.concat_ws("-", "topic", "partition"))
        .otherwise(F.col("partition")),
    )
    started = F.when(F.col("event").isin(*START_EVENTS), 1).otherwise(0)
    by_node = Window.partitionBy("node").orderBy("ts").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    topics = topic_history(frame)
    frame = with_topic_incarnations(frame.withColumn("incarnation", F.sum(started).over(by_node)), topics)
    return LoadedEvents(frame, loaded.malformed, topics)


def load_events(spark: SparkSession, run_dir: Path) -> DataFrame:
    """All events of the run, with `ts` a timestamp, `tp` the partition label, `incarnation` per node, and
    `topic_incarnation`: on an event about a partition, its topic's topic id in a run that deleted a topic
    (topic_incarnations.py)."""
    return read_events(spark, run_dir).rows


def committed_partition_changes(events: DataFrame) -> DataFrame:
    """The committed Partition/PartitionChange records, once each: every controller logs each one at replay, with
    the metadata log offset; the first time any node logged it is when it became visible."""
    return (
        events.where((F.col("event") == "partition_changed") & F.col("offset").isNotNull())
        .groupBy("offset")
        .agg(
            F.min("ts").alias("ts"),
            F.first("topic").alias("topic"),
            F.first("topic_id").alias("topic_id"),
            F.first("topic_incarnation").alias("topic_incarnation"),
            F.first("tp").alias("tp"),
            F.first("leader").alias("leader"),
            F.first("isr").alias("isr"),
            F.coalesce(F.first("elr"), F.array().cast("array<int>")).alias("elr"),
            F.coalesce(F.first("last_known_elr"), F.array().cast("array<int>")).alias("last_known_elr"),
            F.first("replicas").alias("replicas"),
            F.first("adding_replicas").alias("adding_replicas"),
            F.first("removing_replicas").alias("removing_replicas"),
            F.first("leader_epoch").alias("leader_epoch"),
            F.first("partition_epoch").alias("partition_epoch"),
            F.first("reason").alias("reason"),
        )
    )


def committed_broker_registrations(events: DataFrame) -> DataFrame:
    """RegisterBroker records once each: (offset, broker_id, broker_epoch, ts)."""
    return (
        events.where((F.col("event") == "broker_registered") & F.col("offset").isNotNull())
        .groupBy("offset")
        .agg(
            F.min("ts").alias("ts"),
            F.first("broker_id").alias("broker_id"),
            F.first("broker_epoch").alias("broker_epoch"),
        )
    )


def faults(events: DataFrame) -> DataFrame:
    return events.where(F.col("event") == "fault_injected").select("ts", "fault", "target", "target_id", "role")
