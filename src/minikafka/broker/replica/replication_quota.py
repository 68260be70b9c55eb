"""Kafka's replication throttle (KIP-73, its ReplicationQuotaManager): a broker's leaders send, and its followers
take in, the replicas a topic lists in `leader.replication.throttled.replicas` and
`follower.replication.throttled.replicas` at no more than `leader.replication.throttled.rate` and
`follower.replication.throttled.rate` bytes a second. Only a replica out of the ISR is held back; every listed
replica's bytes count toward the rate. A throttled replica is held back while the rate measured over the last
`replication.quota.window.num` windows of `replication.quota.window.size.seconds` is above the bound, so the first
fetch of a quiet period goes through whole and the rate is kept on average, as in Kafka. Pure: callers pass the time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

UNBOUNDED = 2**63 - 1  # Kafka's Long.MAX_VALUE default: no throttle


@dataclass
class _Sample:
    start_ms: int
    size: int = 0


@dataclass
class ReplicationQuota:
    """One side's throttle: the bound, the measured rate, and the partitions throttled on this broker by topic
    (None: all of the topic's)."""

    bound: int = UNBOUNDED  # bytes per second
    window_num: int = 11
    window_ms: int = 1000
    throttled: Mapping[str, frozenset[int] | None] = field(default_factory=dict)
    _samples: list[_Sample] = field(default_factory=list)

    def is_throttled(self, topic: str, partition: int) -> bool:
        if topic not in self.throttled:
            return False
        partitions = self.throttled[topic]
        return partitions is None or partition in partitions

    def exceeded(self, now_ms: int) -> bool:
        return self.bound != UNBOUNDED and self.rate(now_ms) > self.bound

    def record(self, size: int, now_ms: int) -> None:
        """`size` bytes moved now, in the current window (a new one once it has run its length)."""
        self._drop_expired(now_ms)
        samples = self._samples
        if not samples or now_ms - samples[-1].start_ms >= self.window_ms:
            if len(samples) == self.window_num:
                samples.pop(0)
            samples.append(_Sample(now_ms))
        samples[-1].size += size

    def rate(self, now_ms: int) -> float:
        """Bytes a second over the kept windows: measured from the oldest window's start, at least one window long
        (Kafka's SimpleRate), so a burst right after a quiet spell is measured over a whole window."""
        self._drop_expired(now_ms)
        oldest = self._samples[0].start_ms if self._samples else now_ms
        elapsed_ms = max(now_ms - oldest, self.window_ms)
        return sum(sample.size for sample in self._samples) * 1000 / elapsed_ms

    def _drop_expired(self, now_ms: int) -> None:
        expiry_ms = self.window_num * self.window_ms
        while self._samples and now_ms - self._samples[0].start_ms >= expiry_ms:
            self._samples.pop(0)
