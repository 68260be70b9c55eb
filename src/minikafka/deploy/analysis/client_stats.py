"""Client figures from the producer histories: latency percentiles by acks, throughput over time, errors."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

PERCENTILES = (0.5, 0.99, 0.999)


def produce_latency(produced: DataFrame) -> DataFrame:
    """Acknowledged sends per acks setting: count, mean, p50/p99/p999 and max latency in ms."""
    ok = produced.where(F.col("error").isNull() & F.col("latency_ms").isNotNull())
    quantiles = F.percentile_approx("latency_ms", list(PERCENTILES), 10000)
    return (
        ok.groupBy("acks")
        .agg(
            F.count("*").alias("acknowledged"),
            F.avg("latency_ms").alias("mean_ms"),
            quantiles.alias("q"),
            F.max("latency_ms").alias("max_ms"),
        )
        .select(
            "acks",
            "acknowledged",
            "mean_ms",
            F.col("q")[0].alias("p50_ms"),
            F.col("q")[1].alias("p99_ms"),
            F.col("q")[2].alias("p999_ms"),
            "max_ms",
        )
        .orderBy("acks")
    )


def throughput(produced: DataFrame) -> DataFrame:
    """Acknowledged and failed sends per second of the run (by the time the producer learned the outcome)."""
    second = F.date_trunc("second", "ts")
    return (
        produced.groupBy(second.alias("second"))
        .agg(
            F.sum(F.when(F.col("error").isNull(), 1).otherwise(0)).alias("acknowledged"),
            F.sum(F.when(F.col("error").isNotNull(), 1).otherwise(0)).alias("failed"),
        )
        .orderBy("second")
    )


def errors_by_code(produced: DataFrame) -> DataFrame:
    """Failed sends by Kafka error name, with how many were definite (certainly not written)."""
    return (
        produced.where(F.col("error").isNotNull())
        .groupBy("error")
        .agg(
            F.count("*").alias("count"),
            F.sum(F.when(F.coalesce("definite", F.lit(False)), 1).otherwise(0)).alias("definite"),
        )
        .orderBy(F.col("count").desc())
    )
