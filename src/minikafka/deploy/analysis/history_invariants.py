"""Invariants over client histories (Jepsen's Kafka checker): each a function from DataFrames to offending rows."""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

# Errors after which the broker certainly did not append the batch (refused before the append). Anything else
# (timeouts, network errors, NOT_ENOUGH_REPLICAS_AFTER_APPEND) is indefinite: the write may or may not exist.
DEFINITE_ERRORS = (
    "NOT_ENOUGH_REPLICAS",
    "INVALID_REQUIRED_ACKS",
    "MESSAGE_TOO_LARGE",
    "RECORD_LIST_TOO_LARGE",
    "CORRUPT_MESSAGE",
    "INVALID_REQUEST",
    "INVALID_RECORD",
    "OUT_OF_ORDER_SEQUENCE_NUMBER",
    "INVALID_PRODUCER_EPOCH",
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
)


def in_effect() -> Column:
    """A record that counts once acknowledged: not transactional, or of a transaction whose commit was
    acknowledged (an aborted or undecided transaction's records promise nothing to a reader)."""
    committed = (F.col("transaction_end") == "commit") & F.coalesce(F.col("end_acknowledged"), F.lit(False))
    return F.col("transactional_id").isNull() | committed


def acknowledged(produced: DataFrame, acks: tuple[str, ...] = ("all",)) -> DataFrame:
    written = F.col("error").isNull() & F.col("offset").isNotNull() & F.col("acks").isin(*acks)
    return produced.where(written & in_effect())


def lost_writes(produced: DataFrame, consumed: DataFrame, acks: tuple[str, ...] = ("all",)) -> DataFrame:
    """NoCommittedRecordLost: an acks=all acknowledged record not read back at its offset with its value (with
    `acks`, the records acknowledged with those; each row says its `acks`). A `topic_incarnation` column of
    `produced` is carried along."""
    carried = [c for c in ("topic_incarnation",) if c in produced.columns]
    acked = acknowledged(produced, acks).select(
        "topic", "partition", "offset", F.col("value").alias("acked_value"), "ts", "acks", *carried
    )
    read = consumed.select("topic", "partition", "offset", F.col("value").alias("read_value")).distinct()
    joined = acked.join(read, ["topic", "partition", "offset"], "left")
    values_read = joined.groupBy("topic", "partition", "offset", "acked_value", "ts", "acks", *carried).agg(
        F.collect_set("read_value").alias("read_values")
    )
    return values_read.where(~F.array_contains("read_values", F.col("acked_value"))).orderBy(
        "topic", "partition", "offset"
    )


def inconsistent_offsets(produced: DataFrame, consumed: DataFrame) -> DataFrame:
    """One (topic, partition, offset) with two different values, across every reader and acks=all
    acknowledgement. An acks=1 acknowledgement that no read found is the acks=1 loss (explained_losses.py)."""
    observations = (
        acknowledged(produced)
        .select("topic", "partition", "offset", "value")
        .unionByName(consumed.select("topic", "partition", "offset", "value"))
    )
    return (
        observations.groupBy("topic", "partition", "offset")
        .agg(F.collect_set("value").alias("values"))
        .where(F.size("values") > 1)
        .orderBy("topic", "partition", "offset")
    )


def duplicates(consumed: DataFrame, produced: DataFrame | None = None) -> DataFrame:
    """One value at two offsets: a retried send that had been appended. `idempotent` says whether a producer with
    enable.idempotence sent the value; only then is it a broken guarantee rather than an allowed anomaly."""
    found = (
        consumed.select("topic", "partition", "offset", "value")
        .distinct()
        .groupBy("topic", "value")
        .agg(F.collect_set(F.struct("partition", "offset")).alias("positions"))
        .where(F.size("positions") > 1)
    )
    if produced is None:
        return found.withColumn("idempotent", F.lit(False)).orderBy("topic", "value")
    senders = (
        produced.select("topic", "value", F.coalesce(F.col("idempotent"), F.lit(False)).alias("idempotent"))
        .groupBy("topic", "value")
        .agg(F.max("idempotent").alias("idempotent"))
    )
    joined = found.join(senders, ["topic", "value"], "left")
    return joined.withColumn("idempotent", F.coalesce(F.col("idempotent"), F.lit(False))).orderBy("topic", "value")


def aborted_reads(produced: DataFrame, consumed: DataFrame) -> DataFrame:
    """A value whose send definitely failed, yet a consumer read it."""
    # Producers say whether a failure is definite; older histories without the field fall back to the code.
    definite = F.coalesce(F.col("definite"), F.col("error").isin(*DEFINITE_ERRORS))
    failed = produced.where(F.col("error").isNotNull() & definite).select("topic", "value", "error", "ts")
    # A value could be sent twice (never by our generators); only a value with no success counts.
    succeeded = produced.where(F.col("error").isNull()).select("topic", "value")
    failed = failed.join(succeeded, ["topic", "value"], "left_anti")
    read = consumed.select("topic", "value", "partition", "offset").distinct()
    return failed.join(read, ["topic", "value"]).orderBy("topic", "partition", "offset")


def nonmonotonic_polls(consumed: DataFrame) -> DataFrame:
    """Within one consumer's output, each partition's offsets must strictly increase."""
    order = Window.partitionBy("source", "topic", "partition").orderBy("position")
    with_previous = consumed.withColumn("previous_offset", F.lag("offset").over(order))
    return (
        with_previous.where(F.col("previous_offset").isNotNull() & (F.col("offset") <= F.col("previous_offset")))
        .select("source", "topic", "partition", "previous_offset", "offset")
        .orderBy("source", "topic", "partition", "offset")
    )


# The end of a read that reached its high watermark: every offset below that HWM was read (or is not there).
KEYS = ["topic", "partition", "offset"]
WHOLE_LOG = 2**62  # "every offset": the end of a read that saw the whole log


def read_coverage(consumed: DataFrame, ends: DataFrame) -> DataFrame:
    """(topic, partition, from_offset, below_offset): offset ranges some consumer certainly read through. A read
    with a read_end line covers its start up to the high watermark it reached, or up to where it stopped; a file
    without one (an older history, a reader cut short) covers only between the first and last offsets it read."""
    ended = ends.select(
        "source",
        "topic",
        "partition",
        F.coalesce("start_offset", F.lit(0)).alias("from_offset"),
        # A read that reached a confirmed log end saw the whole log: nothing acknowledged lies beyond it.
        F.when(F.col("reached") & (F.col("log_end") <= F.col("position")), F.lit(WHOLE_LOG))
        .when(F.col("reached"), F.greatest("high_watermark", "position"))
        .otherwise(F.col("position"))
        .alias("below_offset"),
    )
    unended = (
        consumed.groupBy("source", "topic", "partition")
        .agg(F.min("offset").alias("from_offset"), (F.max("offset") + 1).alias("below_offset"))
        .join(ends.select("source", "topic", "partition"), ["source", "topic", "partition"], "left_anti")
    )
    return ended.unionByName(unended).where(F.col("below_offset").isNotNull()).drop("source")


@dataclass(frozen=True)
class Unread:
    lost: DataFrame  # a read covered the offset and the record was not there
    unknown: DataFrame  # no read got that far


def classify_unread(
    produced: DataFrame, consumed: DataFrame, ends: DataFrame, acks: tuple[str, ...] = ("all",)
) -> Unread:
    """The acknowledged records not read back (lost_writes) split by whether a read covered
    their offset (then the record is not there: lost) or no read got that far (unknown, as Jepsen's checker
    counts a write whose final read did not complete)."""
    unread = lost_writes(produced, consumed, acks)
    coverage = read_coverage(consumed, ends)
    covered = (
        unread.select(*KEYS)
        .join(coverage, ["topic", "partition"])
        .where((F.col("offset") >= F.col("from_offset")) & (F.col("offset") < F.col("below_offset")))
        .select(*KEYS)
        .distinct()
    )
    return Unread(unread.join(covered, KEYS, "left_semi"), unread.join(covered, KEYS, "left_anti"))
