"""A topic deleted and created again under the same name is a new topic (KIP-516): a new topic id, and leader epochs
that start again at 0. Its partitions keep their labels (`<topic>-<index>`), so every check that keys a partition
keys it by topic id too. The controllers' events carry the topic id; here the brokers' events about a partition and
the clients' acknowledgements are given theirs.

A broker hosts one incarnation's log of a partition until it deletes that log, and the events that end it
(`replica_stopped`, `log_deleted`, `stray_partition_deleted`, `stray_partition_kept`) name its topic id: every event
of that broker about the partition before them is of that topic id. After the last of them, the broker's events
are of the incarnation it hosts at the end, the newest one created by then; a client's acknowledgement too is of
the newest incarnation created by the time it was received.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from minikafka.deploy.analysis.history_invariants import in_effect

# A broker's events that name the topic id of the log it hosted until then (docs/events.md).
HOSTED_LOG_ENDS = ("replica_stopped", "log_deleted", "stray_partition_deleted", "stray_partition_kept")


def node_number() -> Column:
    """The number ending an event's `node` (`broker-2`: 2); null for a node named otherwise. SQL's try_cast: a
    plan may evaluate it before the filter that keeps brokers' events only, and an ANSI cast of "" fails."""
    return F.expr("try_cast(regexp_extract(node, '([0-9]+)$', 1) AS INT)")


def topic_of(tp: Column) -> Column:
    """The topic name of a partition label `<topic>-<index>`."""
    return F.regexp_extract(tp, r"^(.*)-\d+$", 1)


def incarnations(events: DataFrame) -> DataFrame:
    """(topic, topic_id, created_ts, next_created_ts, deleted_ts): each incarnation of each topic name, from its
    first committed partition record to the next incarnation's (null: the newest), and when its RemoveTopic was
    committed (null: never deleted)."""
    replayed = F.col("offset").isNotNull() & F.col("topic_id").isNotNull()
    created = (
        events.where((F.col("event") == "partition_changed") & replayed)
        .groupBy("topic", "topic_id")
        .agg(F.min("ts").alias("created_ts"), F.min("offset").alias("created_offset"))
    )
    following = Window.partitionBy("topic").orderBy("created_offset")
    deleted = (
        events.where((F.col("event") == "topic_deleted") & replayed)
        .groupBy("topic_id")
        .agg(F.min("ts").alias("deleted_ts"))
    )
    return (
        created.withColumn("next_created_ts", F.lead("created_ts").over(following))
        .join(deleted, "topic_id", "left")
        .select("topic", "topic_id", "created_ts", "next_created_ts", "deleted_ts")
    )


def incarnation_at(frame: DataFrame, topic: Column, ts: Column, found: DataFrame) -> DataFrame:
    """`frame` with `incarnation_id`: the topic id of the newest incarnation of `topic` created by `ts` (null: none
    created by then). `found`: incarnations(events)."""
    spans = found.select(
        F.col("topic").alias("_topic"),
        F.col("topic_id").alias("incarnation_id"),
        F.col("created_ts").alias("_from"),
        F.col("next_created_ts").alias("_until"),
    )
    within = (topic == F.col("_topic")) & (ts >= F.col("_from")) & (F.col("_until").isNull() | (ts < F.col("_until")))
    return frame.join(F.broadcast(spans), within, "left").drop("_topic", "_from", "_until")


@dataclass(frozen=True)
class TopicHistory:
    """The run's topic incarnations, decided once: `spans` is incarnations(events), cached; None when the run
    deleted no topic, so each topic name is one topic and the checks need not tell incarnations apart."""

    spans: DataFrame | None


def topic_history(events: DataFrame) -> TopicHistory:
    """One small job: whether the run deleted a topic; if it did, its incarnations (computed once when first used)."""
    deleted = events.where((F.col("event") == "topic_deleted") & F.col("offset").isNotNull()).limit(1).count() > 0
    return TopicHistory(incarnations(events).cache() if deleted else None)


def with_topic_incarnations(events: DataFrame, topics: TopicHistory) -> DataFrame:
    """Every event with `topic_incarnation`, the key the checks give a partition's topic: where the event names a
    partition, its own topic id if it carries one, else the topic id of the log its node hosted then (see the
    module's description); "" elsewhere, and on every event of a run that deleted no topic."""
    if topics.spans is None:
        return events.withColumn("topic_incarnation", F.lit(""))
    ending = F.when(F.col("event").isin(*HOSTED_LOG_ENDS), F.col("topic_id"))
    # Backwards in time, a frame growing from the end (one pass; a frame to the unbounded end is recomputed per row).
    backwards = Window.partitionBy("node", "tp").orderBy(F.col("ts").desc()).rowsBetween(Window.unboundedPreceding, 0)
    about = F.col("tp").isNotNull() & F.col("topic_id").isNull()
    ended = events.withColumn("_hosted", F.when(about, F.last(ending, ignorenulls=True).over(backwards)))
    dated = incarnation_at(ended, F.when(about, topic_of(F.col("tp"))), F.col("ts"), topics.spans)
    return dated.withColumn(
        "topic_incarnation",
        F.when(F.col("tp").isNull(), F.lit("")).otherwise(
            F.coalesce("topic_id", "_hosted", "incarnation_id", F.lit(""))
        ),
    ).drop("_hosted", "incarnation_id")


def acknowledged_topic_ids(acked: DataFrame, topics: TopicHistory) -> DataFrame:
    """`acked` (producer lines: topic, ts, ...) with `topic_incarnation` (the topic id of the incarnation created
    last before the acknowledgement was received; "" when none is known or the run deleted no topic) and
    `deleted_ts` (when that incarnation's deletion was committed; null: never)."""
    if topics.spans is None:
        return acked.withColumn("topic_incarnation", F.lit("")).withColumn("deleted_ts", F.lit(None).cast("timestamp"))
    dated = incarnation_at(acked, F.col("topic"), F.col("ts"), topics.spans)
    deletions = topics.spans.select(F.col("topic_id").alias("incarnation_id"), "deleted_ts")
    return (
        dated.join(deletions, "incarnation_id", "left")
        .withColumn("topic_incarnation", F.coalesce("incarnation_id", F.lit("")))
        .drop("incarnation_id")
    )


@dataclass(frozen=True)
class DeletedTopicWrites:
    kept: DataFrame  # the producer lines, without the acknowledged writes below
    deleted: DataFrame  # acknowledged writes to an incarnation deleted later in the run


def split_deleted_topic_writes(dated: DataFrame) -> DeletedTopicWrites:
    """Kafka deletes a topic's records with it, on purpose: acknowledged writes in effect (any acks; of transactions,
    the committed ones) to an incarnation deleted later in the run are not lost, and a topic created again under the
    name holds other records at their offsets.
    `dated`: the producer lines as acknowledged_topic_ids gives them. `kept` keeps their `topic_incarnation`.
    `deleted`: (topic, partition, offset, acked_value, acks, ts, topic_id, deleted_ts)."""
    # An aborted transaction's records promise nothing, deleted or not: they stay with the other producer lines.
    written = F.col("error").isNull() & F.col("offset").isNotNull() & in_effect()
    gone = F.coalesce(written & F.col("deleted_ts").isNotNull(), F.lit(False))
    deleted = dated.where(gone).select(
        "topic", "partition", "offset", F.col("value").alias("acked_value"), "acks", "ts",
        F.col("topic_incarnation").alias("topic_id"), "deleted_ts",
    )  # fmt: skip
    kept = dated.where(~gone).drop("deleted_ts")
    return DeletedTopicWrites(kept, deleted.orderBy("topic", "partition", "offset"))


def reads_of_kept_topics(consumed: DataFrame, topics: TopicHistory) -> DataFrame:
    """The record lines read from a topic incarnation the run did not delete. A read of a deleted incarnation
    (its line's `topic_id`) holds records deleted with it, at offsets a topic created again under the name uses
    for others: set aside as those writes are (split_deleted_topic_writes). A line without a topic id is kept."""
    if topics.spans is None:
        return consumed
    deleted = topics.spans.where(F.col("deleted_ts").isNotNull()).select("topic_id")
    return consumed.join(F.broadcast(deleted), "topic_id", "left_anti")
