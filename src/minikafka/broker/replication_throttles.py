"""A broker's two replication throttles, its leaders' and its followers' (Kafka's leader and follower
ReplicationQuotaManagers), kept as the metadata sets them: which partitions of each topic this broker throttles
(its own entries of the topics' `*.replication.throttled.replicas`) and the rates, a dynamic
`*.replication.throttled.rate` of this broker, else the cluster default."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from minikafka.broker.config import BrokerConfig
from minikafka.broker.replica.replication_quota import UNBOUNDED, ReplicationQuota
from minikafka.common.throttled_replicas import throttled_partitions
from minikafka.common.topic_config import (
    FOLLOWER_THROTTLED_RATE,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_RATE,
    LEADER_THROTTLED_REPLICAS,
)
from minikafka.kraft_controller.metadata.image import MetadataImage


@dataclass(frozen=True)
class ThrottleSetting:
    """One side's throttle as the metadata last set it, for the event saying it changed."""

    side: str  # leader | follower
    rate: int
    topics: dict[str, list[int] | str]  # the partitions throttled on this broker, or "*"


@dataclass
class ReplicationThrottles:
    """The rates are dynamic broker configs only, as in Kafka: unset, a side is not throttled."""

    node_id: int
    leader: ReplicationQuota = field(default_factory=ReplicationQuota)
    follower: ReplicationQuota = field(default_factory=ReplicationQuota)

    @classmethod
    def from_config(cls, config: BrokerConfig) -> ReplicationThrottles:
        def quota() -> ReplicationQuota:
            window_ms = config.replication_quota_window_size_seconds * 1000
            return ReplicationQuota(window_num=config.replication_quota_window_num, window_ms=window_ms)

        return cls(config.node_id, quota(), quota())

    def update(self, image: MetadataImage) -> list[ThrottleSetting]:
        """Take the metadata's throttles; returns the sides whose setting changed."""
        changed = []
        sides = (
            ("leader", self.leader, LEADER_THROTTLED_REPLICAS, LEADER_THROTTLED_RATE),
            ("follower", self.follower, FOLLOWER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_RATE),
        )
        for side, quota, replicas_key, rate_key in sides:
            dynamic = image.dynamic_broker_config(rate_key, self.node_id)
            rate = UNBOUNDED if dynamic is None else int(dynamic)
            throttled = {}
            for topic, configs in image.topic_configs.items():
                value = configs.get(replicas_key)
                partitions = None if value is None else throttled_partitions(value, self.node_id)
                if value is not None and partitions != frozenset():
                    throttled[topic] = partitions
            if rate != quota.bound or throttled != quota.throttled:
                quota.bound, quota.throttled = rate, throttled
                topics = {t: "*" if p is None else sorted(p) for t, p in sorted(throttled.items())}
                changed.append(ThrottleSetting(side, rate, topics))
        return changed

    def leader_withholds(self, topic: str, partition: int, replica_id: int, isr: Collection[int], now_ms: int) -> bool:
        """Kafka's shouldLeaderThrottle: a Fetch answers no records for a throttled replica out of the ISR while
        the leaders' rate is over its bound."""
        quota = self.leader
        return replica_id not in isr and quota.is_throttled(topic, partition) and quota.exceeded(now_ms)

    def follower_holds_back(self, topic: str, partition: int, in_isr: bool, now_ms: int) -> bool:
        """Kafka's shouldFollowerThrottle: a Fetch leaves out a throttled replica of ours out of the ISR while the
        followers' rate is over its bound."""
        quota = self.follower
        return not in_isr and quota.is_throttled(topic, partition) and quota.exceeded(now_ms)

    def record_sent(self, sent: Iterable[tuple[str, int, int]], now_ms: int) -> None:
        """A Fetch answer's (topic, partition, bytes): the throttled partitions' bytes count toward the leaders'
        rate, in the ISR or not."""
        quota = self.leader
        size = sum(n for topic, partition, n in sent if quota.is_throttled(topic, partition))
        if size:
            quota.record(size, now_ms)

    def record_fetched(self, topic: str, partition: int, size: int, now_ms: int) -> None:
        if size and self.follower.is_throttled(topic, partition):
            self.follower.record(size, now_ms)
