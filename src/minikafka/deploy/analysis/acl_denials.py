"""Who the ACLs refused what: the brokers' `authorization_failed` events of client requests, per principal.

A broker logs a denial once per principal, operation and resource (again after its bounded memory forgets it, or
after a restart), so `count` is how many times the denial was logged across the run's nodes, not how many requests
were refused. Refusals of inter-node gRPC calls (same event, with `method` and no `operation`) are not ACL denials
and are left out.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

DENIAL_COLUMNS = ("principal", "operation", "resource_type", "resource_name", "count", "first", "last", "nodes")
KEY = ("principal", "operation", "resource_type", "resource_name")


def acl_denials(events: DataFrame) -> DataFrame:
    """One row per (principal, operation, resource type, resource name): how often it was logged, first and last
    time, and the nodes and client hosts that logged it (sorted)."""
    denied = events.where((F.col("event") == "authorization_failed") & F.col("operation").isNotNull())
    return (
        denied.groupBy(*KEY)
        .agg(
            F.count("*").alias("count"),
            F.min("ts").alias("first"),
            F.max("ts").alias("last"),
            F.array_sort(F.collect_set("node")).alias("nodes"),
            F.array_sort(F.collect_set("host")).alias("hosts"),
        )
        .orderBy(*KEY)
    )


def denials_by_principal(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The collected rows as the summary holds them: principal -> its denials (rows in principal order)."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(row["principal"], []).append({k: v for k, v in row.items() if k != "principal"})
    return grouped


def denial_rows(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary's denials flat again, one row per denial, for the report's table (none for an older summary)."""
    return [
        {"principal": principal, **denial}
        for principal, denials in (summary.get("acl_denials") or {}).items()
        for denial in denials
    ]


def denial_lines(summary: dict[str, Any]) -> list[str]:
    """One line per principal: what it was refused, how often it was logged, and where."""
    lines = []
    for principal, denials in (summary.get("acl_denials") or {}).items():
        told = "; ".join(
            f"{d['operation']} {d['resource_type']} {d['resource_name']} x{d['count']} on {', '.join(d['nodes'])}"
            for d in denials
        )
        lines.append(f"{principal}: {told}")
    return lines
