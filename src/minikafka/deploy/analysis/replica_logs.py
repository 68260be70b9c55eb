"""The replicas' logs on disk after the run, as batch headers, and the LogMatching check over them.

Each broker's partition directories (`RUN/<broker>/data/<topic>-<p>/`) are read by Spark tasks: one row per
batch of the valid prefix of each segment (what recovery would keep), plus one row per replica with its log
start, log end and checkpointed high watermark. Followers append the leader's batches byte for byte, so two
replicas agree on an offset range exactly when their batches there have the same offsets, epoch and CRC.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructField, StructType

from minikafka.common.record_batch import CorruptRecordError, read_header, valid_prefix
from minikafka.storage.checkpoint import CheckpointError, OffsetCheckpoint

SEGMENT_SUFFIX = ".log"
HIGH_WATERMARK_FILE = "replication-offset-checkpoint"
METADATA_PARTITION = "__cluster_metadata-0"

BATCH_SCHEMA = StructType(
    [
        StructField("node", StringType()),
        StructField("tp", StringType()),
        StructField("base_offset", LongType()),
        StructField("last_offset", LongType()),
        StructField("leader_epoch", IntegerType()),
        StructField("crc", LongType()),
        StructField("segment", StringType()),
    ]
)
CORRUPT_SCHEMA = StructType(
    [
        StructField("node", StringType()),
        StructField("tp", StringType()),
        StructField("segment", StringType()),
        StructField("position", LongType()),
        StructField("base_offset", LongType()),
        StructField("last_offset", LongType()),
        StructField("stored_crc", LongType()),
        StructField("computed_crc", LongType()),
    ]
)
REPLICA_SCHEMA = StructType(
    [
        StructField("node", StringType()),
        StructField("tp", StringType()),
        StructField("log_start_offset", LongType()),
        StructField("log_end_offset", LongType()),
        StructField("high_watermark", LongType()),
        StructField("torn_tail", BooleanType()),
    ]
)

SCHEMAS = {"batch": BATCH_SCHEMA, "replica": REPLICA_SCHEMA, "corrupt": CORRUPT_SCHEMA}  # ReplicaLogs' order


def replica_directories(run_dir: Path) -> list[tuple[str, str]]:
    """(node label, partition directory) for every data partition replica of every broker of the run."""
    found = []
    for data in sorted(run_dir.glob("broker-*/data")):
        for directory in sorted(p for p in data.iterdir() if p.is_dir() and p.name != METADATA_PARTITION):
            if "-" in directory.name and not directory.name.endswith(".delete"):
                found.append((data.parent.name, str(directory)))
    return found


def _of_kind(kind: str, row: tuple[str, tuple]) -> bool:
    return row[0] == kind


def read_replica(node: str, directory: str) -> Iterator[tuple[str, tuple]]:
    """("batch", row) for each batch and one ("replica", row); runs inside a Spark task."""
    path = Path(directory)
    tp = path.name
    first: int | None = None
    end = 0
    torn = False
    for segment in sorted(path.glob(f"*{SEGMENT_SUFFIX}")):
        data = segment.read_bytes()
        batches, valid = valid_prefix(data)
        torn = torn or valid != len(data)
        corrupt = _corrupt_batch_at(data, valid)
        if corrupt is not None:
            yield "corrupt", (node, tp, segment.name, valid, *corrupt)
        for batch in batches:
            if first is None:
                first = batch.base_offset
            end = batch.next_offset
            yield (
                "batch",
                (node, tp, batch.base_offset, batch.last_offset, batch.partition_leader_epoch, batch.crc, segment.name),
            )
    try:
        high_watermark = OffsetCheckpoint(path / HIGH_WATERMARK_FILE, tp).read()
    except CheckpointError:
        high_watermark = None
    yield "replica", (node, tp, first if first is not None else end, end, high_watermark, torn)


def _corrupt_batch_at(data: bytes, position: int) -> tuple[int, int, int, int] | None:
    """(base offset, last offset, stored CRC, computed CRC) of the whole batch at `position` whose CRC does not
    match (a flipped byte); None when the data ends there or is torn (a crash's unfinished write, not corruption)."""
    if position >= len(data):
        return None
    try:
        batch = read_header(data, position)
    except CorruptRecordError:
        return None
    if batch.is_valid():
        return None
    return batch.base_offset, batch.last_offset, batch.crc, batch.computed_crc()


@dataclass(frozen=True)
class ReplicaLogs:
    batches: DataFrame  # the valid prefix of every replica, batch by batch
    replicas: DataFrame  # one row per replica: log start, log end, high watermark, torn tail
    corrupt: DataFrame  # a whole batch whose CRC does not match, where a replica's valid prefix stops


def load_replica_logs(spark: SparkSession, run_dir: Path) -> ReplicaLogs:
    """Every broker's partition logs in the run directory."""
    directories = replica_directories(run_dir)
    if not directories:
        return ReplicaLogs(
            *(spark.createDataFrame([], schema) for schema in (BATCH_SCHEMA, REPLICA_SCHEMA, CORRUPT_SCHEMA))
        )
    rows = (
        spark.sparkContext.parallelize(directories, max(1, min(len(directories), 8)))
        .flatMap(lambda item: read_replica(*item))
        .cache()
    )
    frames = [
        spark.createDataFrame(rows.filter(partial(_of_kind, kind)).map(lambda r: r[1]), schema)
        for kind, schema in SCHEMAS.items()
    ]
    return ReplicaLogs(*frames)


def log_matching(batches: DataFrame, replicas: DataFrame) -> DataFrame:
    """LogMatching: any two replicas of a partition hold the same batches (offsets, leader epoch, CRC) from the
    later of their log starts up to the lower of their high watermarks (each capped at its own log end); a batch
    one of them lacks there counts."""
    # A checkpointed HWM can be above the replica's own log end (a crash lost unflushed data after the checkpoint
    # was written): nothing past the log end is there to compare, so the replica's HWM counts as its log end.
    capped = F.least(F.coalesce("high_watermark", F.lit(0)), F.col("log_end_offset"))
    a = replicas.select(
        "tp",
        F.col("node").alias("node_a"),
        capped.alias("hwm_a"),
        F.col("log_start_offset").alias("start_a"),
    )
    b = replicas.select(
        "tp",
        F.col("node").alias("node_b"),
        capped.alias("hwm_b"),
        F.col("log_start_offset").alias("start_b"),
    )
    pairs = (
        a.join(b, "tp")
        .where(F.col("node_a") < F.col("node_b"))
        .select(
            "tp",
            "node_a",
            "node_b",
            F.greatest("start_a", "start_b").alias("from_offset"),
            F.least("hwm_a", "hwm_b").alias("below_offset"),
        )
    )

    def side(node_column: str, suffix: str) -> DataFrame:
        return (
            pairs.join(batches.withColumnRenamed("node", node_column), ["tp", node_column])
            .where((F.col("base_offset") >= F.col("from_offset")) & (F.col("last_offset") < F.col("below_offset")))
            .select(
                "tp",
                "node_a",
                "node_b",
                "base_offset",
                F.col("last_offset").alias(f"last_offset_{suffix}"),
                F.col("leader_epoch").alias(f"leader_epoch_{suffix}"),
                F.col("crc").alias(f"crc_{suffix}"),
            )
        )

    joined = side("node_a", "a").join(side("node_b", "b"), ["tp", "node_a", "node_b", "base_offset"], "full_outer")
    differs = (
        F.col("last_offset_a").isNull()
        | F.col("last_offset_b").isNull()
        | (F.col("last_offset_a") != F.col("last_offset_b"))
        | (F.col("leader_epoch_a") != F.col("leader_epoch_b"))
        | (F.col("crc_a") != F.col("crc_b"))
    )
    return joined.where(differs).orderBy("tp", "base_offset", "node_a", "node_b")
