"""A topic's `leader.replication.throttled.replicas` and `follower.replication.throttled.replicas` values: the
literal '*' (every replica of the topic) or partition:broker pairs, as Kafka's ThrottledReplicaListValidator takes
them, and the partitions one broker throttles."""

from __future__ import annotations

import re

_REPLICA_LIST_FORMAT = "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
_REPLICA = re.compile(r"[0-9]+:[0-9]+")


def throttled_replicas_problem(text: str) -> str | None:
    """Kafka's ThrottledReplicaListValidator: the literal '*', or partition:broker pairs (empty entries only last)."""
    entries = [entry.strip() for entry in text.split(",")]
    if entries == ["*"]:
        return None
    seen_empty = False
    for entry in entries:
        if not entry:
            seen_empty = True
            continue
        if seen_empty or not _REPLICA.fullmatch(entry):
            return f"must be the literal '*' or a list of replicas in the following format: {_REPLICA_LIST_FORMAT}"
    return None


def throttled_partitions(text: str, broker_id: int) -> frozenset[int] | None:
    """The partitions a valid throttled-replicas value throttles on `broker_id`: None for every partition ('*')."""
    entries = [entry.strip() for entry in text.split(",") if entry.strip()]
    if entries == ["*"]:
        return None
    pairs = (entry.split(":") for entry in entries)
    return frozenset(int(partition) for partition, broker in pairs if int(broker) == broker_id)
