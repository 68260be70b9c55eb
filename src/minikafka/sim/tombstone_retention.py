"""A deleted key back on a leader that missed the key's tombstone for longer than `delete.retention.ms`.

Kafka documents that bound: a reader, and a fetching follower is one, has `delete.retention.ms` to see a tombstone
before a cleaner may remove it. A replica away longer than that may keep the key's older value and bring it back
when it leads. The simulator explains such a comeback rather than calling it a defect, and only when the log ends it
saw show the replica that far behind; a cleaner that removed the tombstone sooner is still caught.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from minikafka.broker.config import BrokerConfig
from minikafka.sim.invariants import Comeback, PartitionReplica

DELETE_RETENTION = "log.cleaner.delete.retention.ms"


@dataclass
class LogEnds:
    """Each replica's log end over the run, noted at every check where it changed."""

    changes: dict[tuple[int, int], list[tuple[float, int]]] = field(default_factory=dict)  # (broker, partition)

    def note(self, now: float, replicas: Iterable[PartitionReplica]) -> None:
        for replica in replicas:
            seen = self.changes.setdefault((replica.broker, replica.partition), [])
            if not seen or seen[-1][1] != replica.log_end_offset:
                seen.append((now, replica.log_end_offset))

    def last_passed(self, broker: int, partition: int, offset: int) -> float | None:
        """When the broker's log of the partition last grew past `offset` from at or below it (after a truncation
        or a wipe, the later time), or None if it never did."""
        passed, below = None, True
        for at, log_end in self.changes.get((broker, partition), []):
            if log_end > offset and below:
                passed = at
            below = log_end <= offset
        return passed


def delete_retention_ms(overrides: dict[str, str]) -> int:
    """The brokers' `delete.retention.ms` for the simulated topic (the world sets no topic-level one)."""
    return int(overrides.get(DELETE_RETENTION, BrokerConfig.log_cleaner_delete_retention_ms))


def explain_comeback(log_ends: LogEnds, comeback: Comeback, retention_ms: int, step_s: float) -> str | None:
    """Why the comeback is within Kafka's documented bound, or None if the replica was not behind the tombstone
    for longer than `retention_ms` (from when the world first saw it committed; one step of slack for sampling)."""
    if comeback.committed_at is None:
        return None
    passed = log_ends.last_passed(comeback.broker, comeback.partition, comeback.tombstone_offset)
    if passed is None or (passed - comeback.committed_at - step_s) * 1000 <= retention_ms:
        return None
    return (
        f"broker {comeback.broker}'s log of partition {comeback.partition} passed offset {comeback.tombstone_offset} "
        f"only at {passed:.1f}s, {passed - comeback.committed_at:.1f} s after the tombstone there was committed: "
        f"longer than delete.retention.ms ({retention_ms} ms), the time Kafka documents a reader has to see a "
        "tombstone"
    )
