"""Client histories as DataFrames: what producers were told and what consumers read.

Files (DESIGN.md's contract): producer histories `RUN/history/produce-*.jsonl`, one line per record:
{"ts", "topic", "partition", "offset", "value", "acks", "error", "latency_ms"} (failed lines also carry
`definite`: the record certainly was not written); consumer output
`RUN/history/consume-*.jsonl`, one line per record: {"topic", "partition", "offset", "key", "value", "leader_epoch"}.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DoubleType, IntegerType, LongType, StringType, StructField, StructType

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
    ]
)

CONSUME_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("key", StringType()),
        StructField("value", StringType()),
        StructField("leader_epoch", IntegerType()),
    ]
)


def _read(spark: SparkSession, files: list[Path], schema: StructType) -> DataFrame:
    if not files:
        return spark.createDataFrame([], schema).withColumn("source", F.lit(None).cast(StringType()))
    frame = spark.read.schema(schema).json([str(f) for f in files])
    return frame.withColumn("source", F.regexp_extract(F.input_file_name(), r"([^/]+)\.jsonl$", 1))


def load_produced(spark: SparkSession, run_dir: Path) -> DataFrame:
    """Every producer history line, with `ts` as a timestamp and the source file's name."""
    frame = _read(spark, sorted((run_dir / "history").glob("produce-*.jsonl")), PRODUCE_SCHEMA)
    return frame.withColumn("ts", F.to_timestamp("ts"))


def load_consumed(spark: SparkSession, run_dir: Path) -> DataFrame:
    """Every consumed record, with the consumer's file name and its line position (to check poll order)."""
    frame = _read(spark, sorted((run_dir / "history").glob("consume-*.jsonl")), CONSUME_SCHEMA)
    return frame.withColumn("position", F.monotonically_increasing_id())
