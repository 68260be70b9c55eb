"""A group's configs (Kafka's GroupConfig, KIP-848 and KIP-932): keys an IncrementalAlterConfigs may set for one
consumer or share group, validated as Kafka's controller validates them, each value within the group coordinator's
bounds. The controller knows no broker's group settings, so the bounds are Kafka's defaults, as a Kafka controller
left at its defaults checks them. minikafka stores and describes them; its coordinators keep their broker-wide
session and heartbeat settings."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from minikafka.common.topic_config import INT_MAX, TopicConfigDef, config_problem

CONSUMER_SESSION_TIMEOUT_MS = "consumer.session.timeout.ms"
CONSUMER_HEARTBEAT_INTERVAL_MS = "consumer.heartbeat.interval.ms"
SHARE_SESSION_TIMEOUT_MS = "share.session.timeout.ms"
SHARE_HEARTBEAT_INTERVAL_MS = "share.heartbeat.interval.ms"
SHARE_RECORD_LOCK_DURATION_MS = "share.record.lock.duration.ms"


class GroupConfigDef(NamedTuple):
    name: str
    default: int  # Kafka's default: the broker's group.* setting of the same meaning, at its default
    low: int  # the coordinator's bounds (group.consumer.min.session.timeout.ms, ...), at their defaults
    high: int
    low_key: str
    high_key: str


GROUP_CONFIG_DEFS: tuple[GroupConfigDef, ...] = (
    GroupConfigDef(
        CONSUMER_SESSION_TIMEOUT_MS,
        45000,
        45000,
        60000,
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
    ),
    GroupConfigDef(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        5000,
        5000,
        15000,
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
    ),
    GroupConfigDef(
        SHARE_SESSION_TIMEOUT_MS,
        45000,
        45000,
        60000,
        "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms",
    ),
    GroupConfigDef(
        SHARE_HEARTBEAT_INTERVAL_MS,
        5000,
        5000,
        15000,
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
    ),
    GroupConfigDef(
        SHARE_RECORD_LOCK_DURATION_MS,
        30000,
        15000,
        60000,
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
    ),
)


def _int_at_least_one(text: str) -> str | None:
    try:
        value = int(text.strip())
    except ValueError:
        return "Not a number of type INT"
    if not -(2**31) <= value <= INT_MAX:
        return "Not a number of type INT"
    return None if value >= 1 else "Value must be at least 1"


GROUP_CONFIGS: Mapping[str, TopicConfigDef] = {
    d.name: TopicConfigDef(d.name, "int", _int_at_least_one) for d in GROUP_CONFIG_DEFS
}


def group_configs_problem(values: Mapping[str, str]) -> str | None:
    """Kafka's GroupConfig.validate over a group's configs after the change (unset keys at their defaults): each
    within its bounds, and each session timeout above its heartbeat interval; None when they are acceptable."""
    for name, value in values.items():
        problem = config_problem(GROUP_CONFIGS, name, value, kind="group")
        if problem is not None:
            return problem
    effective = {d.name: int(values.get(d.name, d.default)) for d in GROUP_CONFIG_DEFS}
    for d in GROUP_CONFIG_DEFS:
        if effective[d.name] < d.low:
            return f"{d.name} must be greater than or equal to {d.low_key}"
        if effective[d.name] > d.high:
            return f"{d.name} must be less than or equal to {d.high_key}"
    for session, heartbeat in (
        (CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS),
        (SHARE_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS),
    ):
        if effective[session] <= effective[heartbeat]:
            return f"{session} must be greater than {heartbeat}"
    return None
