"""Settings the pure control managers need, with Kafka's names in snake_case.

The process config (kraft_controller.config.ControllerConfig) has many more keys; the shell builds this from it with
`ControlConfig.from_settings`, so the pure code never sees the environment or files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from minikafka.kraft_controller.control.partition_change import TopicDefaults


@dataclass(frozen=True)
class ControlConfig:
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    # alter.partition.broker.epoch.check: KIP-903; off only to demonstrate the bug it fixes.
    alter_partition_broker_epoch_check: bool = True
    default_replication_factor: int = 1  # default.replication.factor
    num_partitions: int = 1  # num.partitions
    auto_leader_rebalance_enable: bool = True  # auto.leader.rebalance.enable
    leader_imbalance_check_interval_ms: int = 300_000  # leader.imbalance.check.interval.seconds, in ms
    unclean_leader_election_enable: bool = False  # unclean.leader.election.enable (a topic config overrides it)
    min_insync_replicas: int = 1  # min.insync.replicas (a topic config overrides it)
    # eligible.leader.replicas.version: KIP-966; 0 is Kafka 3.x (the last ISR member stays, the HWM ignores min ISR).
    eligible_leader_replicas_version: int = 1
    transaction_version: int = 2  # transaction.version: KIP-890's feature level, which clients read in ApiVersions
    # minikafka.alter.partition.partition.epoch.check: off only to demonstrate a stale ISR overwriting a newer one.
    alter_partition_partition_epoch_check: bool = True

    @property
    def topic_defaults(self) -> TopicDefaults:
        return TopicDefaults(self.unclean_leader_election_enable, self.min_insync_replicas)

    @classmethod
    def from_settings(cls, settings: Any) -> ControlConfig:
        """Copy the fields of the same names from any settings object (e.g. the process's ControllerConfig)."""
        return cls(
            session_timeout_ms=settings.session_timeout_ms,
            alter_partition_broker_epoch_check=settings.alter_partition_broker_epoch_check,
            alter_partition_partition_epoch_check=settings.alter_partition_partition_epoch_check,
            default_replication_factor=settings.default_replication_factor,
            num_partitions=settings.num_partitions,
            auto_leader_rebalance_enable=settings.auto_leader_rebalance_enable,
            leader_imbalance_check_interval_ms=settings.leader_imbalance_check_interval_seconds * 1000,
            unclean_leader_election_enable=settings.unclean_leader_election_enable,
            min_insync_replicas=settings.min_insync_replicas,
            eligible_leader_replicas_version=settings.eligible_leader_replicas_version,
            transaction_version=settings.transaction_version,
        )
