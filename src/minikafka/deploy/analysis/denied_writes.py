"""NoDeniedWriteVisible: what the ACLs refused is never written.

Two kinds of history line are checked:
- a send answered with an authorization error (TOPIC_, CLUSTER_ or TRANSACTIONAL_ID_AUTHORIZATION_FAILED): the
  broker refused the batch before appending it, so its value must never be read;
- every send of a producer whose lines say `refused_by_acls` (chaos --acls's denied producers: the run's ACLs, made
  before the workload and never changed, refuse its writes to that topic), whatever it was told (a timeout too may
  hide a write the brokers let through): its value must be neither acknowledged nor read.
The producer is the line's `principal`, else its history file. An allowed producer that was refused now and then
(a broker answering before it has replayed the ACLs) is not a denied write; the report's ACL denials show it.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

AUTHORIZATION_ERRORS = (
    "TOPIC_AUTHORIZATION_FAILED",
    "CLUSTER_AUTHORIZATION_FAILED",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
)
COLUMNS = ("producer", "topic", "value", "error", "seen", "partition", "offset")


def _refused_by_acls() -> Column:
    return F.coalesce(F.col("refused_by_acls"), F.lit(False))


def denied_send() -> Column:
    """A line checked: a send refused with an authorization error, or any send of a producer the ACLs refuse."""
    return F.col("error").isin(*AUTHORIZATION_ERRORS) | _refused_by_acls()


def denied_sends(produced: DataFrame) -> DataFrame:
    """The lines checked (denied_send), with the producer's name."""
    named = produced.withColumn("producer", F.coalesce(F.col("principal"), F.col("source")))
    return named.where(denied_send())


def denied_writes_visible(produced: DataFrame, consumed: DataFrame) -> DataFrame:
    """Each checked value that was acknowledged (`seen` "acknowledged": only for a producer the ACLs refuse) or read
    by any consumer (`seen` "read", at the offset it was read at)."""
    denied = denied_sends(produced)
    acknowledged = denied.where(_refused_by_acls() & F.col("error").isNull() & F.col("offset").isNotNull()).select(
        "producer", "topic", "value", "error", F.lit("acknowledged").alias("seen"), "partition", "offset"
    )
    reads = consumed.select("topic", "value", "partition", "offset").distinct()
    read = (
        denied.select("producer", "topic", "value", "error")
        .join(reads, ["topic", "value"])
        .select("producer", "topic", "value", "error", F.lit("read").alias("seen"), "partition", "offset")
    )
    return acknowledged.unionByName(read).select(*COLUMNS).orderBy("producer", "topic", "partition", "offset")
