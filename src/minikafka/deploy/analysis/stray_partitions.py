"""Stray partition logs left on the brokers' disks after the run: a partition directory whose topic id the final
metadata no longer has (the topic was deleted, perhaps re-created under a new id), or whose partition the final
metadata no longer assigns to that broker (a reassignment moved the replica away while the broker was offline).

A broker deletes such logs at start-up (minikafka.stray.partition.check.enable) and while it runs (a deletion or a
reassignment it sees): one left at the end belongs to a broker that kept it, or that was offline when the
metadata took the partition away and has not started since.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from minikafka.deploy.analysis.events import committed_partition_changes
from minikafka.deploy.analysis.replica_logs import replica_directories
from minikafka.storage.checkpoint import CheckpointError
from minikafka.storage.partition_log import PARTITION_METADATA_FILE, PartitionMetadataFile

DISK_SCHEMA = StructType(
    [
        StructField("node", StringType()),
        StructField("broker_id", IntegerType()),
        StructField("tp", StringType()),
        StructField("partition", IntegerType()),
        StructField("topic_id", StringType()),
        StructField("directory", StringType()),
    ]
)


def disk_rows(run_dir: Path) -> list[tuple]:
    """(node, broker id, tp, partition, topic id or None, directory) of every partition directory on disk."""
    rows = []
    for node, directory in replica_directories(run_dir):
        path = Path(directory)
        topic, sep, partition = path.name.rpartition("-")
        if not sep or not topic or not partition.isdigit() or not node.startswith("broker-"):
            continue  # a directory being deleted (`<tp>.<id>-delete`, `-stray`), not a partition log
        try:
            topic_id = PartitionMetadataFile(path / PARTITION_METADATA_FILE).read()
        except CheckpointError:
            topic_id = None
        rows.append((node, int(node.removeprefix("broker-")), path.name, int(partition), topic_id, directory))
    return rows


def final_assignment(events: DataFrame) -> DataFrame:
    """(topic_id, partition, replicas) as the last committed Partition/PartitionChange left them, for the topics
    the metadata still has."""
    latest = Window.partitionBy("topic_id", "partition").orderBy(F.col("offset").desc())
    deleted = events.where((F.col("event") == "topic_deleted") & F.col("offset").isNotNull()).select("topic_id")
    changes = committed_partition_changes(events).withColumn(
        "partition", F.regexp_extract("tp", r"-(\d+)$", 1).cast("int")
    )
    return (
        changes.withColumn("rank", F.row_number().over(latest))
        .where(F.col("rank") == 1)
        .join(deleted.distinct(), "topic_id", "left_anti")
        .select("topic_id", "partition", "replicas")
    )


def stray_partition_logs(spark: SparkSession, events: DataFrame, run_dir: Path) -> DataFrame:
    """Every stray partition log on disk, with why the final metadata does not assign it to its broker."""
    disk = spark.createDataFrame(disk_rows(run_dir), DISK_SCHEMA)
    joined = disk.join(final_assignment(events), ["topic_id", "partition"], "left")
    reason = (
        F.when(F.col("topic_id").isNull(), F.lit("no partition.metadata (topic id unknown)"))
        .when(F.col("replicas").isNull(), F.concat(F.lit("topic id "), "topic_id", F.lit(" is not in the metadata")))
        .when(
            ~F.array_contains("replicas", F.col("broker_id")),
            F.concat(F.lit("not a replica (replicas "), F.array_join("replicas", ", "), F.lit(")")),
        )
    )
    return (
        joined.withColumn("reason", reason)
        .where(F.col("reason").isNotNull())
        .select("node", "tp", "topic_id", "reason", "directory")
        .orderBy("node", "tp")
    )
