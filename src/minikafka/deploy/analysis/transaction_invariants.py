"""Transactional invariants (Kafka's transactions: a transaction's records become visible to read_committed
consumers all together, on its commit, or never), over the transactional producers' histories, the
read_committed reads and the leaders' `high_watermark_advanced` events.

A transactional producer's history line carries `transactional_id`, `transaction` (its number within the
producer), `transaction_end` (the EndTxn it sent: `commit`, or `abort`, also when it sent none) and
`end_acknowledged`. A read is read_committed when its `read_end` lines say `isolation_level: read_committed`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from minikafka.deploy.analysis.history_invariants import KEYS, read_coverage

TRANSACTION = ["transactional_id", "transaction"]
READ_COMMITTED = "read_committed"


def transactional(produced: DataFrame) -> DataFrame:
    return produced.where(F.col("transactional_id").isNotNull())


def committed_reads(consumed: DataFrame, ends: DataFrame) -> tuple[DataFrame, DataFrame]:
    """The record lines and read_end lines of the read_committed reads (a read is one file's one topic)."""
    readers = ends.where(F.col("isolation_level") == READ_COMMITTED).select("source", "topic").distinct()
    keys = ["source", "topic"]
    return consumed.join(readers, keys, "left_semi"), ends.join(readers, keys, "left_semi")


def aborted_transaction_reads(produced: DataFrame, consumed: DataFrame, ends: DataFrame) -> DataFrame:
    """AbortedRead for transactions: a read_committed consumer read a record of a transaction its producer
    aborted, or never asked to commit (a producer that gave up ends its transaction with an abort). Rows as
    `history_invariants.aborted_reads`: (topic, value, error, ts, partition, offset)."""
    aborted = transactional(produced).where(F.col("transaction_end") != "commit")
    aborted = aborted.select(
        "topic",
        "value",
        F.concat(
            F.lit("read_committed read a record of aborted transaction "),
            "transactional_id",
            F.lit("#"),
            F.col("transaction").cast("string"),
        ).alias("error"),  # fmt: skip
        "ts",
    )
    read, _ = committed_reads(consumed, ends)
    found = aborted.join(read.select("topic", "value", "partition", "offset").distinct(), ["topic", "value"])
    return found.select("topic", "value", "error", "ts", "partition", "offset").orderBy("topic", "partition", "offset")


def aborted_records_checked(produced: DataFrame, ends: DataFrame) -> DataFrame:
    """The aborted transactions' records of topics some read_committed read went through (what the check above
    could have caught)."""
    topics = ends.where(F.col("isolation_level") == READ_COMMITTED).select("topic").distinct()
    return transactional(produced).where(F.col("transaction_end") != "commit").join(topics, "topic", "left_semi")


def commit_transaction_reads(produced: DataFrame, consumed: DataFrame, ends: DataFrame) -> DataFrame:
    """Per transaction whose producer asked to commit it: (transactional_id, transaction, end_acknowledged,
    records, read, covered, missing): how many of its records a read_committed read returned, how many lay where
    such a read went through (read ones included), and the covered ones it did not return, as (partition,
    offset) pairs."""
    commits = transactional(produced).where(F.col("transaction_end") == "commit")
    commits = commits.select(*TRANSACTION, "end_acknowledged", *KEYS, "value")
    read_lines, read_ends = committed_reads(consumed, ends)
    read = read_lines.select("topic", "value").distinct().withColumn("was_read", F.lit(True))
    coverage = read_coverage(read_lines, read_ends)
    in_range = (F.col("offset") >= F.col("from_offset")) & (F.col("offset") < F.col("below_offset"))
    covered = (
        commits.select(*KEYS).join(coverage, ["topic", "partition"]).where(in_range).select(*KEYS).distinct()
    ).withColumn("in_coverage", F.lit(True))
    records = (
        commits.join(read, ["topic", "value"], "left")
        .join(covered, KEYS, "left")
        .withColumn("was_read", F.coalesce("was_read", F.lit(False)))
        .withColumn("was_covered", F.coalesce("in_coverage", F.lit(False)) | F.col("was_read"))
    )
    unread = F.col("was_covered") & ~F.col("was_read")
    return records.groupBy(*TRANSACTION, "end_acknowledged").agg(
        F.count("*").alias("records"),
        F.sum(F.col("was_read").cast("int")).alias("read"),
        F.sum(F.col("was_covered").cast("int")).alias("covered"),
        F.sort_array(F.collect_list(F.when(unread, F.struct("partition", "offset")))).alias("missing"),
    )


def torn_transactions(transaction_reads: DataFrame) -> DataFrame:
    """TornTransaction: a transaction some of whose records a read_committed read returned while it went through
    others without returning them (whether or not the commit was acknowledged: it is all or nothing)."""
    return transaction_reads.where((F.col("read") > 0) & (F.size("missing") > 0)).orderBy(*TRANSACTION)


def last_stable_offset_monotonic(events: DataFrame) -> DataFrame:
    """LastStableOffsetMonotonic: a leader's last stable offset (on its coalesced `high_watermark_advanced`
    events) never goes back within its leader epoch and process incarnation, and is never above its high
    watermark: what a read_committed consumer was shown as decided stays decided."""
    logged = events.where((F.col("event") == "high_watermark_advanced") & F.col("last_stable_offset").isNotNull())
    order = Window.partitionBy("node", "incarnation", "tp", "leader_epoch").orderBy("ts")
    with_previous = logged.withColumn("previous_last_stable_offset", F.lag("last_stable_offset").over(order))
    back = F.col("last_stable_offset") < F.col("previous_last_stable_offset")
    above = F.col("last_stable_offset") > F.col("high_watermark")
    return (
        with_previous.where(back | above)
        .select(
            "ts",
            "node",
            "tp",
            "leader_epoch",
            "previous_last_stable_offset",
            "last_stable_offset",
            "high_watermark",
            F.when(above, F.lit("above the high watermark")).otherwise(F.lit("went back")).alias("problem"),
        )
        .orderBy("tp", "ts")
    )


def last_stable_offsets_logged(events: DataFrame) -> DataFrame:
    return events.where((F.col("event") == "high_watermark_advanced") & F.col("last_stable_offset").isNotNull())
