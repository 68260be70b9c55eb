"""`chaos --compacted-keys N`: the chaos topic compacted, its producers overwriting N keys again and again, and the
quick figures of the run: every key's latest acknowledged value read back, and how far the cleaners shrank the log.

The topic's settings make the cleaners work during a short run: small segments rolled every few seconds (only
rolled segments are cleaned), a low dirty ratio, and the brokers' cleaners polling every second. `analyze` checks
the same with CompactedLatestValueKept; the counts here are the summary's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from minikafka.deploy.local_cluster import NodeSpec
from minikafka.deploy.scenario.events import find_events, query

COMPACTED_TOPIC_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": str(64 * 1024),
    "segment.ms": "5000",
    "min.cleanable.dirty.ratio": "0.1",
}
CLEANER_SETTINGS = {"log.cleaner.backoff.ms": "1000"}


def record_key(index: int, key_count: int, first_key: int) -> bytes:
    """The key of a producer's `index`-th record: its keys in turn from `first_key`, so producers starting apart
    overwrite every key in a different order."""
    return f"key-{(first_key + index) % key_count}".encode()


@dataclass
class CompactionCounts:
    """A compacted run's figures: keys, the latest values lost, what the producers wrote and what is left."""

    keys: int = 0  # distinct (partition, key) with an acknowledged acks=all record
    lost_latest: int = 0  # keys whose latest acknowledged value the final read did not hold (nor a later write)
    unread_latest: int = 0  # keys whose latest acknowledged offset the final read did not reach: unknown
    written_bytes: int = 0  # keys and values of the acknowledged records (no batch overhead: a lower bound)
    log_bytes: int = 0  # the topic's segment files on every broker at the end, summed over replicas
    replicas: int = 0  # the replicas log_bytes sums over
    cleanings: int = 0  # log_cleaned events
    cleaned_bytes_before: int = 0  # their bytes_before and bytes_after, summed
    cleaned_bytes_after: int = 0


def _latest_acknowledged(histories: list[Path]) -> tuple[dict[tuple[str, int, str], tuple[int, str]], int]:
    """The latest acks=all acknowledged (offset, value) of every (topic, partition, key), and the bytes of keys and
    values acknowledged."""
    latest: dict[tuple[str, int, str], tuple[int, str]] = {}
    written = 0
    for history in histories:
        for line in history.read_text().splitlines():
            sent = json.loads(line)
            if sent["error"] is not None or sent.get("key") is None or sent["offset"] is None:
                continue
            written += len(sent["key"].encode()) + len(sent["value"].encode())
            where = (sent["topic"], sent["partition"], sent["key"])
            if sent["acks"] == "all" and sent["offset"] > latest.get(where, (-1, ""))[0]:
                latest[where] = (sent["offset"], sent["value"])
    return latest, written


def latest_values_lost(histories: list[Path], consumed: Path) -> CompactionCounts:
    """For every key, its latest acknowledged record must be the last one of the key the final read holds, or a
    later one (a write whose answer was lost); a key whose record the read did not reach is not counted."""
    latest, written = _latest_acknowledged(histories)
    last_read: dict[tuple[str, int, str], tuple[int, str]] = {}
    below: dict[tuple[str, int], int] = {}
    for line in consumed.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "read_end":
            reached = record["high_watermark"] if record["reached"] else record["position"]
            below[(record["topic"], record["partition"])] = reached or 0
        elif record.get("key") is not None:
            last_read[(record["topic"], record["partition"], record["key"])] = (record["offset"], record["value"])
    lost = unread = 0
    for (topic, partition, key), (offset, value) in latest.items():
        if offset >= below.get((topic, partition), 0):
            unread += 1  # the read never got there: unknown, not lost
            continue
        read = last_read.get((topic, partition, key))
        lost += read is None or read[0] < offset or (read[0] == offset and read[1] != value)
    return CompactionCounts(keys=len(latest), lost_latest=lost, unread_latest=unread, written_bytes=written)


def log_bytes(brokers: list[NodeSpec], topic: str) -> tuple[int, int]:
    """The bytes of `topic`'s segment files (`*.log`) over every broker's replicas, and how many replicas."""
    total = replicas = 0
    for broker in brokers:
        for directory in broker.data_dir.glob(f"{topic}-*"):
            name, _, partition = directory.name.rpartition("-")
            if directory.is_dir() and name == topic and partition.isdigit():
                replicas += 1
                total += sum(segment.stat().st_size for segment in directory.glob("*.log"))
    return total, replicas


def cleaner_totals(run_dir: Path, topic: str) -> tuple[int, int, int]:
    """(cleanings, bytes_before, bytes_after) of the brokers' `log_cleaned` events of `topic`'s partitions."""
    cleaned = [
        event
        for _, event in find_events(run_dir, query("log_cleaned", node="broker"))
        if str(event.get("partition", "")).rsplit("-", 1)[0] == topic
    ]
    before = sum(int(event.get("bytes_before") or 0) for event in cleaned)
    return len(cleaned), before, sum(int(event.get("bytes_after") or 0) for event in cleaned)


def compaction_lines(counts: dict[str, int]) -> str:
    """The chaos summary's lines for a compacted run (a CompactionCounts as a dict)."""
    written, size, replicas = counts["written_bytes"], counts["log_bytes"], max(1, counts["replicas"])
    before, after = counts["cleaned_bytes_before"], counts["cleaned_bytes_after"]
    return "\n".join(
        [
            f"compaction:     {counts['keys']} keys, {counts['lost_latest']} latest acknowledged values not read back, "
            f"{counts['unread_latest']} beyond where the final read stopped",
            f"cleanings:      {counts['cleanings']} log_cleaned, {before} bytes cleaned down to {after}",
            f"log size:       {size} bytes on disk over {counts['replicas']} replicas ({size // replicas} each on "
            f"average) for {written} bytes of keys and values acknowledged",
        ]
    )
