"""NoDeniedWriteVisible: a producer the ACLs refused writes nothing its consumers can see.

A producer is "refused on a topic" when one of its sends to the topic was answered with an authorization error
(TOPIC_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED). The producer is its history's `principal` (chaos
--acls logs one per line), else its history file. Every value it sent to that topic, whatever it was told (a
timeout too may hide a refused write), must be neither acknowledged nor read by any consumer. This assumes the
producer's ACLs do not change during the history, as in a chaos run, which creates them before the workload.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

AUTHORIZATION_ERRORS = (
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
)
COLUMNS = ("producer", "topic", "value", "error", "seen", "partition", "offset")


def _with_producer(produced: DataFrame) -> DataFrame:
    return produced.withColumn("producer", F.coalesce(F.col("principal"), F.col("source")))


def denied_attempts(produced: DataFrame) -> DataFrame:
    """The sends refused with an authorization error."""
    return _with_producer(produced).where(F.col("error").isin(*AUTHORIZATION_ERRORS))


def denied_writes_visible(produced: DataFrame, consumed: DataFrame) -> DataFrame:
    """Each value of a producer refused on its topic that was acknowledged (`seen` "acknowledged") or read
    (`seen` "read", at the offset it was read at)."""
    refused = denied_attempts(produced).select("producer", "topic").distinct()
    theirs = _with_producer(produced).join(refused, ["producer", "topic"], "left_semi")
    acknowledged = theirs.where(F.col("error").isNull() & F.col("offset").isNotNull()).select(
        "producer", "topic", "value", "error", F.lit("acknowledged").alias("seen"), "partition", "offset"
    )
    reads = consumed.select("topic", "value", "partition", "offset").distinct()
    read = (
        theirs.select("producer", "topic", "value", "error")
        .join(reads, ["topic", "value"])
        .select("producer", "topic", "value", "error", F.lit("read").alias("seen"), "partition", "offset")
    )
    return acknowledged.unionByName(read).select(*COLUMNS).orderBy("producer", "topic", "partition", "offset")
