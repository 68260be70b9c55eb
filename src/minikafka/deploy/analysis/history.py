"""Client histories as DataFrames: what producers were told and what consumers read.

Files (the formats in docs/events.md): producer histories `RUN/history/produce-*.jsonl`, one line per record:
{"ts", "topic", "partition", "offset", "value", "acks", "error", "latency_ms", "idempotent"}, and "key" for a keyed
record (failed lines also carry `definite`: the record certainly was not written); consumer output
`RUN/history/consume-*.jsonl`, one line per record: {"topic", "partition", "offset", "key", "value", "leader_epoch",
"topic_id"},
then (`consume --json`) one line per partition {"type": "read_end", "topic", "partition", "start_offset",
"position", "high_watermark", "reached", "error"}: where that partition's read stopped and why.
Malformed lines are skipped and counted (deploy.analysis.malformed).
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

from minikafka.deploy.analysis.malformed import Loaded, Shape, read_json

PRODUCE_SCHEMA = StructType(
    [
        StructField("ts", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("value", StringType()),
        StructField("acks", StringType()),
        StructField("error", StringType()),
        StructField("latency_ms", DoubleType()),
        StructField("definite", BooleanType()),
        StructField("idempotent", BooleanType()),  # absent in older histories: not idempotent
        StructField("key", StringType()),  # keyed records only (produce --key-count)
        # A transactional producer's records (chaos --transactional-producers): its id, the transaction's number,
        # the EndTxn it sent (commit or abort; abort too when it sent none) and whether that was acknowledged.
        StructField("transactional_id", StringType()),
        StructField("transaction", LongType()),
        StructField("transaction_end", StringType()),
        StructField("end_acknowledged", BooleanType()),
        StructField("principal", StringType()),  # the producer's SASL principal (chaos --acls)
        StructField("refused_by_acls", BooleanType()),  # the run's ACLs refuse the producer's writes
    ]
)
PRODUCE_SHAPE = Shape(required=("topic", "value", "acks"), timestamps=("ts",), digested=("value",))

CONSUME_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("key", StringType()),
        StructField("value", StringType()),
        StructField("leader_epoch", IntegerType()),
        StructField("topic_id", StringType()),  # the topic id the leader answered for; absent in older histories
        # a group member's lines (consume --group) also say its group and when it polled the record
        StructField("group", StringType()),
        StructField("ts", StringType()),
    ]
)
READ_END = "read_end"
READ_END_FIELDS = [
    StructField("type", StringType()),
    StructField("start_offset", LongType()),
    StructField("position", LongType()),
    StructField("high_watermark", LongType()),
    StructField("reached", BooleanType()),
    StructField("error", StringType()),
    StructField("log_end", LongType()),
    StructField("isolation_level", StringType()),  # read_committed or read_uncommitted; absent in older histories
]
CONSUME_SHAPE = Shape(required=("topic", "partition"), digested=("value",))


def _source(frame: DataFrame) -> DataFrame:
    return frame.withColumn("source", F.regexp_extract("file", r"([^/]+)\.jsonl$", 1)).drop("file")


def read_produced(spark: SparkSession, run_dir: Path) -> Loaded:
    files = sorted((run_dir / "history").glob("produce-*.jsonl"))
    loaded = read_json(spark, files, PRODUCE_SCHEMA, PRODUCE_SHAPE)
    return Loaded(_source(loaded.rows), loaded.malformed)


def read_consume_files(spark: SparkSession, run_dir: Path) -> Loaded:
    """Every well-formed consume line, records and read_end lines alike (`type` tells them apart)."""
    files = sorted((run_dir / "history").glob("consume-*.jsonl"))
    schema = StructType([*CONSUME_SCHEMA.fields, *READ_END_FIELDS])
    loaded = read_json(spark, files, schema, CONSUME_SHAPE)
    # A record line needs its offset; a line of another type than read_end is not one we know.
    known = (F.col("type").isNull() & F.col("offset").isNotNull()) | (F.col("type") == READ_END)
    rows = loaded.rows.withColumn("position_in_file", F.monotonically_increasing_id())
    malformed = loaded.malformed.unionByName(rows.where(~known).select("file"))
    return Loaded(_source(rows.where(known)), malformed)


def read_group_files(spark: SparkSession, run_dir: Path) -> DataFrame:
    """The record lines of the chaos run's group consumers (`history/group-*.jsonl`, one file per incarnation of
    a member); kept apart from the consume histories, whose checks assume one reader per file."""
    files = sorted((run_dir / "history").glob("group-*.jsonl"))
    loaded = read_json(spark, files, CONSUME_SCHEMA, CONSUME_SHAPE)
    return _source(loaded.rows).where(F.col("offset").isNotNull())


def load_produced(spark: SparkSession, run_dir: Path) -> DataFrame:
    """Every producer history line, with `ts` as a timestamp and the source file's name."""
    return read_produced(spark, run_dir).rows


def consumed_records(lines: DataFrame) -> DataFrame:
    """The record lines, with the consumer's file name and its line position (to check poll order)."""
    return lines.where(F.col("type").isNull()).select(
        *CONSUME_SCHEMA.fieldNames(), "source", F.col("position_in_file").alias("position")
    )


def read_ends(lines: DataFrame) -> DataFrame:
    """The read_end lines: (source, topic, partition, start_offset, position, high_watermark, reached, error,
    log_end, isolation_level)."""
    return lines.where(F.col("type") == READ_END).select(
        "source",
        "topic",
        "partition",
        "start_offset",
        "position",
        "high_watermark",
        "reached",
        "error",
        "log_end",
        "isolation_level",
    )


def load_consumed(spark: SparkSession, run_dir: Path) -> DataFrame:
    """Every consumed record, with the consumer's file name and its line position (to check poll order)."""
    return consumed_records(read_consume_files(spark, run_dir).rows)
