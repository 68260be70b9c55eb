"""The entries DescribeConfigs answers, built from the config declarations (name, type, default, doc) and the
values a broker runs with: pure, so the wire handler only turns them into kio entities."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.broker.config import BrokerConfig
from minikafka.common.config import config_keys, describe_keys
from minikafka.common.config_source import ConfigSource
from minikafka.common.group_config import (
    CONSUMER_HEARTBEAT_INTERVAL_MS,
    CONSUMER_SESSION_TIMEOUT_MS,
    GROUP_CONFIG_DEFS,
)
from minikafka.common.topic_config import DYNAMIC_BROKER_CONFIGS, LONG_MAX, TOPIC_CONFIGS

DYNAMIC_TOPIC_CONFIG = int(ConfigSource.DYNAMIC_TOPIC_CONFIG)
DYNAMIC_BROKER_CONFIG = int(ConfigSource.DYNAMIC_BROKER_CONFIG)
DYNAMIC_DEFAULT_BROKER_CONFIG = int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
STATIC_BROKER_CONFIG, DEFAULT_CONFIG = int(ConfigSource.STATIC_BROKER_CONFIG), int(ConfigSource.DEFAULT_CONFIG)
GROUP_CONFIG = int(ConfigSource.GROUP_CONFIG)
# Kafka's ConfigType
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(1, 10)

# Python's int covers Kafka's INT, LONG and SHORT keys: these are the ones Kafka declares LONG or SHORT.
_LONG_KEYS = frozenset(
    {
        "connections.max.idle.ms",
        "connections.max.reauth.ms",
        "log.flush.interval.messages",
        "log.flush.interval.ms",
        "log.flush.scheduler.interval.ms",
        "log.retention.bytes",
        "log.retention.check.interval.ms",
        "log.retention.ms",
        "log.roll.jitter.ms",
        "log.segment.delete.delay.ms",
        "log.roll.ms",
        "log.cleaner.backoff.ms",
        "log.cleaner.dedupe.buffer.size",
        "log.cleaner.delete.retention.ms",
        "log.cleaner.max.compaction.lag.ms",
        "log.cleaner.min.compaction.lag.ms",
        "log.message.timestamp.after.max.ms",
        "log.message.timestamp.before.max.ms",
        "log.local.retention.ms",
        "log.local.retention.bytes",
        "replica.high.watermark.checkpoint.interval.ms",
        "replica.lag.time.max.ms",
    }
)
_SHORT_KEYS = frozenset({"offsets.topic.replication.factor"})
# Keys holding secrets: Kafka declares passwords as PASSWORD, which it never returns; sasl.plain.users stands in for
# the JAAS user_NAME="PASSWORD" entries, so it is one too.
_PASSWORD_KEYS = frozenset({"ssl.key.password", "sasl.plain.users"})
_KINDS = {"bool": BOOLEAN, "str": STRING, "list": LIST, "float": DOUBLE}
_TOPIC_KINDS = {"int": INT, "long": LONG, "list": LIST, "boolean": BOOLEAN, "double": DOUBLE, "short": SHORT}

# Each topic config's broker-level synonym (Kafka's names): its value when the topic does not set it.
TOPIC_SYNONYMS = {name: definition.broker_name for name, definition in TOPIC_CONFIGS.items()}
# Broker-level synonyms minikafka has no key for: the only value it supports.
_FIXED_BROKER_VALUES = {"unclean.leader.election.enable": "false"}
# Topic configs whose broker synonym has no default of its own (Kafka's null): the value the broker derives
# (log.retention.hours and the like; BrokerConfig's property of that name) when nothing sets the synonym.
_DERIVED_TOPIC_VALUES = {"retention.ms": "retention_ms", "segment.ms": "roll_ms", "segment.jitter.ms": "roll_jitter_ms"}


@dataclass(frozen=True)
class DynamicBrokerValues:
    """The dynamic broker configs the metadata holds: this broker's own, and the cluster-wide default."""

    own: Mapping[str, str] = dataclasses.field(default_factory=dict)
    cluster: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def synonyms(self, name: str) -> list[Synonym]:
        """Kafka's order: the per-broker value, then the cluster default."""
        found = []
        if name in self.own:
            found.append(Synonym(name, self.own[name], DYNAMIC_BROKER_CONFIG))
        if name in self.cluster:
            found.append(Synonym(name, self.cluster[name], DYNAMIC_DEFAULT_BROKER_CONFIG))
        return found


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: int


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None  # None: unset, or sensitive
    source: int
    read_only: bool
    sensitive: bool
    config_type: int
    doc: str | None
    synonyms: tuple[Synonym, ...]  # the entry's own source first, then what it falls back to


def kafka_value(value: Any) -> str | None:
    """A value as Kafka writes it: true/false, lists comma-separated; an empty string (minikafka's "not set") or
    None is null."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if value is None or value == "":
        return None
    return str(value)


def _broker_type(name: str, type_name: str) -> int:
    if name in _PASSWORD_KEYS:
        return PASSWORD
    base = type_name.rstrip("?")
    if base == "int":
        return LONG if name in _LONG_KEYS else SHORT if name in _SHORT_KEYS else INT
    return _KINDS.get(base, STRING)


def broker_entries(config: BrokerConfig, dynamic: DynamicBrokerValues | None = None) -> list[ConfigEntry]:
    """Every broker key, sorted by name: the value it runs with, from the first of its sources in Kafka's order
    (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG when its properties or --set gave
    it, DEFAULT_CONFIG); read-only unless it is a dynamic broker config."""
    dynamic = dynamic or DynamicBrokerValues()
    entries = []
    # describe_keys gives each key's type name, default and doc, in the order of config_keys' fields
    for (field, _), row in zip(config_keys(type(config)), describe_keys(type(config)), strict=True):
        name = row["name"]
        sensitive = name in _PASSWORD_KEYS
        value = None if sensitive else kafka_value(getattr(config, field.name))
        default = None if sensitive else kafka_value(row["default"])
        synonyms = [] if sensitive else dynamic.synonyms(name)
        if name in config.set_keys:
            synonyms.append(Synonym(name, value, STATIC_BROKER_CONFIG))
        if not row["required"] and (default is not None or sensitive):
            synonyms.append(Synonym(name, default, DEFAULT_CONFIG))  # Kafka lists no null default
        entries.append(
            ConfigEntry(
                name=name,
                value=synonyms[0].value if synonyms else value,
                source=synonyms[0].source if synonyms else DEFAULT_CONFIG,
                read_only=name not in DYNAMIC_BROKER_CONFIGS,
                sensitive=sensitive,
                config_type=_broker_type(name, row["type"]),
                doc=row["doc"] or None,
                synonyms=tuple(synonyms),
            )
        )
    # Kafka still lists broker.id, which in KRaft takes node.id's value
    node_id = next(entry for entry in entries if entry.name == "node.id")
    entries.append(dataclasses.replace(node_id, name="broker.id", synonyms=_renamed(node_id.synonyms, "broker.id")))
    entries.extend(_dynamic_only_entries(dynamic, {entry.name for entry in entries}))
    return sorted(entries, key=lambda entry: entry.name)


def _dynamic_only_entries(dynamic: DynamicBrokerValues, listed: set[str]) -> list[ConfigEntry]:
    """Dynamic values of Kafka keys the broker has no setting of its own for (the SASL listener configs Kafka
    keeps): listed with their dynamic source, as Kafka lists every key it knows."""
    entries = []
    for name in sorted((set(dynamic.own) | set(dynamic.cluster)) - listed):
        synonyms = dynamic.synonyms(name)
        definition = DYNAMIC_BROKER_CONFIGS.get(name)
        entries.append(
            ConfigEntry(
                name=name,
                value=synonyms[0].value,
                source=synonyms[0].source,
                read_only=False,
                sensitive=False,
                config_type=_TOPIC_KINDS.get(definition.kind, STRING) if definition else STRING,
                doc=None,
                synonyms=tuple(synonyms),
            )
        )
    return entries


def _renamed(synonyms: tuple[Synonym, ...], name: str) -> tuple[Synonym, ...]:
    return tuple(dataclasses.replace(synonym, name=name) for synonym in synonyms)


def topic_entries(
    config: BrokerConfig, topic_values: Mapping[str, str | None], dynamic: DynamicBrokerValues | None = None
) -> list[ConfigEntry]:
    """Every topic config: the topic's own value (DYNAMIC_TOPIC_CONFIG), else its broker-level synonym's, with that
    synonym's source (a dynamic broker value, else STATIC_BROKER_CONFIG when the broker's properties set it, else
    DEFAULT_CONFIG)."""
    dynamic = dynamic or DynamicBrokerValues()
    broker = {entry.name: entry for entry in broker_entries(config, dynamic)}
    entries = []
    for name, definition in sorted(TOPIC_CONFIGS.items()):
        broker_name = TOPIC_SYNONYMS[name]
        synonyms = [Synonym(name, topic_values[name], DYNAMIC_TOPIC_CONFIG)] if topic_values.get(name) else []
        if broker_name in broker:
            synonyms.extend(broker[broker_name].synonyms)
        elif broker_name:
            synonyms.extend(dynamic.synonyms(broker_name))
            synonyms.append(Synonym(broker_name, _FIXED_BROKER_VALUES[broker_name], DEFAULT_CONFIG))
        value = synonyms[0].value if synonyms else None
        if not broker_name and value is None:  # no broker synonym: Kafka's default
            value = definition.default
        elif name == "flush.ms" and value is None:  # no time-based flush: Kafka's default, the longest interval
            value = str(LONG_MAX)
        elif name in _DERIVED_TOPIC_VALUES and value is None:  # from log.retention.hours and the like
            value = str(getattr(config, _DERIVED_TOPIC_VALUES[name]))
        doc = broker[broker_name].doc if broker_name in broker else None
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=synonyms[0].source if synonyms else DEFAULT_CONFIG,
                read_only=False,
                sensitive=False,
                config_type=_TOPIC_KINDS.get(definition.kind, STRING),
                doc=doc,
                synonyms=tuple(synonyms),
            )
        )
    return entries


def cluster_default_entries(cluster: Mapping[str, str]) -> list[ConfigEntry]:
    """The cluster-wide default broker resource (the name ""): only what is set there, as Kafka answers it."""
    return [
        ConfigEntry(
            name=name,
            value=value,
            source=DYNAMIC_DEFAULT_BROKER_CONFIG,
            read_only=False,
            sensitive=False,
            config_type=_TOPIC_KINDS.get(DYNAMIC_BROKER_CONFIGS[name].kind, STRING)
            if name in DYNAMIC_BROKER_CONFIGS
            else STRING,
            doc=None,
            synonyms=(Synonym(name, value, DYNAMIC_DEFAULT_BROKER_CONFIG),),
        )
        for name, value in sorted(cluster.items())
    ]


def group_entries(config: BrokerConfig, group_values: Mapping[str, str]) -> list[ConfigEntry]:
    """Every group config: the group's own value (GROUP_CONFIG), else the default this broker's coordinator
    would use (its group.consumer.* setting for the consumer keys, Kafka's default for the share ones), as
    Kafka's DescribeConfigs answers a group, whether or not it exists."""
    defaults = {
        CONSUMER_SESSION_TIMEOUT_MS: config.group_consumer_session_timeout_ms,
        CONSUMER_HEARTBEAT_INTERVAL_MS: config.group_consumer_heartbeat_interval_ms,
    }
    entries = []
    for definition in sorted(GROUP_CONFIG_DEFS, key=lambda d: d.name):
        name = definition.name
        own = group_values.get(name)
        value = own if own is not None else str(defaults.get(name, definition.default))
        source = GROUP_CONFIG if own is not None else DEFAULT_CONFIG
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=source,
                read_only=False,
                sensitive=False,
                config_type=INT,
                doc=None,
                synonyms=(Synonym(name, value, source),),
            )
        )
    return entries
