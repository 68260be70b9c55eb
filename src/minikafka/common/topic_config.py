"""The per-topic configs this cluster understands, declared once with their Kafka names, types and ranges
(Kafka's TopicConfig/LogConfig definitions), so a bad value is refused with the key's name before any request; and
the broker configs that may change at run time (Kafka's dynamic broker configs): the broker-level synonyms of topic
configs, validated by the same definitions, and producer.id.expiration.ms."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from minikafka.common.compression import COMPRESSION_TYPES, GZIP_LEVEL, LZ4_LEVEL, ZSTD_LEVEL, CompressionLevels
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.throttled_replicas import throttled_replicas_problem

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
LEADER_THROTTLED_RATE = "leader.replication.throttled.rate"
FOLLOWER_THROTTLED_RATE = "follower.replication.throttled.rate"
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
CLEANUP_POLICIES = ("compact", "delete")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    kind: str  # Kafka's ConfigDef type: "int", "long", "list" or "boolean"
    check: Callable[[str], str | None]  # None: acceptable; else why not
    broker_name: str = ""  # the broker-level synonym (Kafka's LogConfig.TopicConfigSynonyms)
    default: str = ""  # Kafka's default, for a config without a broker-level synonym


def _number(kind: str, minimum: int) -> Callable[[str], str | None]:
    low, high = (INT_MIN, INT_MAX) if kind == "int" else (LONG_MIN, LONG_MAX)

    def check(text: str) -> str | None:
        try:
            value = int(text.strip())
        except ValueError:
            return f"not a number of type {kind.upper()}"
        if not low <= value <= high:
            return f"not a number of type {kind.upper()} (between {low} and {high})"
        return None if value >= minimum else f"value must be at least {minimum}"

    return check


def _policy_list(text: str) -> str | None:
    """Kafka's ValidList.in("compact", "delete"): one or both, comma-separated."""
    items = [item.strip() for item in text.split(",")]
    unknown = [item for item in items if item not in CLEANUP_POLICIES]
    if unknown:
        return f"String must be one of: compact, delete (not {unknown[0]!r})"
    return None


def _ratio(text: str) -> str | None:
    try:
        value = float(text.strip())
    except ValueError:
        return "not a number of type DOUBLE"
    return None if 0.0 <= value <= 1.0 else "Value must be between 0 and 1"


def _compression(text: str) -> str | None:
    """Kafka's ValidString.in over compression.type's values."""
    return None if text in COMPRESSION_TYPES else f"String must be one of: {', '.join(COMPRESSION_TYPES)}"


def _level(levels: CompressionLevels) -> Callable[[str], str | None]:
    """A compression.<codec>.level: an INT in the codec's range (Kafka's validator for it)."""

    def check(text: str) -> str | None:
        return _number("int", INT_MIN)(text) or levels.problem(int(text.strip()))

    return check


def _timestamp_type(text: str) -> str | None:
    """Kafka's ValidString.in over message.timestamp.type's values."""
    return None if text in TIMESTAMP_TYPES else f"String must be one of: {', '.join(TIMESTAMP_TYPES)}"


def _boolean(text: str) -> str | None:
    return None if text.strip().lower() in ("true", "false") else "Expected value to be either true or false"


def _remote_storage(text: str) -> str | None:
    """Kafka's LogConfig.validateRemoteStorageOnlyIfSystemEnabled, on a broker without remote storage."""
    if problem := _boolean(text):
        return problem
    if text.strip().lower() == "true":
        return (
            "Tiered Storage functionality is disabled in the broker. Topic cannot be configured with remote log "
            "storage."
        )
    return None


TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = {
    d.name: d
    for d in (
        TopicConfigDef("min.insync.replicas", "int", _number("int", 1), "min.insync.replicas"),
        TopicConfigDef("segment.bytes", "int", _number("int", 14), "log.segment.bytes"),
        TopicConfigDef("segment.ms", "long", _number("long", 1), "log.roll.ms"),
        TopicConfigDef("segment.jitter.ms", "long", _number("long", 0), "log.roll.jitter.ms"),
        TopicConfigDef("segment.index.bytes", "int", _number("int", 4), "log.index.size.max.bytes"),
        TopicConfigDef("index.interval.bytes", "int", _number("int", 0), "log.index.interval.bytes"),
        # Taken as Kafka takes them, and change nothing here (the broker's keys say why).
        TopicConfigDef("file.delete.delay.ms", "long", _number("long", 0), "log.segment.delete.delay.ms"),
        TopicConfigDef("preallocate", "boolean", _boolean, "log.preallocate"),
        TopicConfigDef("retention.ms", "long", _number("long", -1), "log.retention.ms"),
        TopicConfigDef("retention.bytes", "long", _number("long", -1), "log.retention.bytes"),
        TopicConfigDef("flush.messages", "long", _number("long", 1), "log.flush.interval.messages"),
        TopicConfigDef("flush.ms", "long", _number("long", 0), "log.flush.interval.ms"),
        TopicConfigDef("max.message.bytes", "int", _number("int", 0), "message.max.bytes"),
        TopicConfigDef("cleanup.policy", "list", _policy_list, "log.cleanup.policy"),
        TopicConfigDef("min.cleanable.dirty.ratio", "double", _ratio, "log.cleaner.min.cleanable.ratio"),
        TopicConfigDef("min.compaction.lag.ms", "long", _number("long", 0), "log.cleaner.min.compaction.lag.ms"),
        TopicConfigDef("max.compaction.lag.ms", "long", _number("long", 1), "log.cleaner.max.compaction.lag.ms"),
        TopicConfigDef("delete.retention.ms", "long", _number("long", 0), "log.cleaner.delete.retention.ms"),
        TopicConfigDef("unclean.leader.election.enable", "boolean", _boolean, "unclean.leader.election.enable"),
        TopicConfigDef("compression.type", "string", _compression, "compression.type"),
        TopicConfigDef("message.timestamp.type", "string", _timestamp_type, "log.message.timestamp.type"),
        TopicConfigDef(
            "message.timestamp.before.max.ms", "long", _number("long", 0), "log.message.timestamp.before.max.ms"
        ),
        TopicConfigDef(
            "message.timestamp.after.max.ms", "long", _number("long", 0), "log.message.timestamp.after.max.ms"
        ),
        *(TopicConfigDef(c.config, "int", _level(c), c.config) for c in (GZIP_LEVEL, LZ4_LEVEL, ZSTD_LEVEL)),
        # The replication throttle's replicas (no broker-level synonym; the rates are broker configs).
        TopicConfigDef(LEADER_THROTTLED_REPLICAS, "list", throttled_replicas_problem),
        TopicConfigDef(FOLLOWER_THROTTLED_REPLICAS, "list", throttled_replicas_problem),
        # Tiered storage's, as a Kafka broker takes them with remote.log.storage.system.enable=false (there is no
        # remote storage here): remote.storage.enable=true refused, the others kept and without effect.
        TopicConfigDef("remote.storage.enable", "boolean", _remote_storage, default="false"),
        TopicConfigDef("local.retention.ms", "long", _number("long", -2), "log.local.retention.ms"),
        TopicConfigDef("local.retention.bytes", "long", _number("long", -2), "log.local.retention.bytes"),
        TopicConfigDef("remote.log.copy.disable", "boolean", _boolean, default="false"),
        TopicConfigDef("remote.log.delete.on.disable", "boolean", _boolean, default="false"),
    )
}

PRODUCER_ID_EXPIRATION_MS = "producer.id.expiration.ms"
THROTTLED_RATES = (LEADER_THROTTLED_RATE, FOLLOWER_THROTTLED_RATE)


def _double(text: str) -> str | None:
    try:
        float(text.strip())
    except ValueError:
        return "not a number of type DOUBLE"
    return None


def _short(text: str) -> str | None:
    try:
        value = int(text.strip())
    except ValueError:
        return "not a number of type SHORT"
    return None if -(2**15) <= value < 2**15 else "not a number of type SHORT"


def _any_string(text: str) -> str | None:
    return None


# Kafka's SASL configs a broker may change at run time without a listener prefix (its DynamicListenerConfig set),
# typed as its broker defines them (no ranges): Kafka takes and keeps them for a broker or as the cluster default;
# minikafka has no Kerberos and no login refresh, so they are stored and described, and change nothing.
KAFKA_SASL_DYNAMIC_CONFIGS: tuple[TopicConfigDef, ...] = (
    TopicConfigDef("sasl.kerberos.service.name", "string", _any_string),
    TopicConfigDef("sasl.kerberos.kinit.cmd", "string", _any_string),
    TopicConfigDef("sasl.kerberos.ticket.renew.window.factor", "double", _double),
    TopicConfigDef("sasl.kerberos.ticket.renew.jitter", "double", _double),
    TopicConfigDef("sasl.kerberos.min.time.before.relogin", "long", _number("long", LONG_MIN)),
    TopicConfigDef("sasl.kerberos.principal.to.local.rules", "list", _any_string),
    TopicConfigDef("sasl.login.refresh.window.factor", "double", _double),
    TopicConfigDef("sasl.login.refresh.window.jitter", "double", _double),
    TopicConfigDef("sasl.login.refresh.min.period.seconds", "short", _short),
    TopicConfigDef("sasl.login.refresh.buffer.seconds", "short", _short),
)

# The broker configs an alter may change at run time, for one broker or as the cluster-wide default: the
# broker-level synonyms of the topic configs, each validated as its topic config is, and the broker's own dynamic
# ones.
DYNAMIC_BROKER_CONFIGS: Mapping[str, TopicConfigDef] = {
    **{
        d.broker_name: TopicConfigDef(d.broker_name, d.kind, d.check, d.broker_name)
        for d in TOPIC_CONFIGS.values()
        if d.broker_name
    },
    PRODUCER_ID_EXPIRATION_MS: TopicConfigDef(
        PRODUCER_ID_EXPIRATION_MS, "int", _number("int", 1), PRODUCER_ID_EXPIRATION_MS
    ),
    **{name: TopicConfigDef(name, "long", _number("long", 0), name) for name in THROTTLED_RATES},
    **{d.name: TopicConfigDef(d.name, d.kind, d.check, d.name) for d in KAFKA_SASL_DYNAMIC_CONFIGS},
}


def config_problem(
    definitions: Mapping[str, TopicConfigDef], key: str, value: str | None, kind: str | None = None
) -> str | None:
    """Why `value` is not acceptable for `key` (Kafka's message), or None; a None value (a deletion) only needs
    the key to be known. `kind` names the resource in the unknown-key message (default: topic or dynamic broker)."""
    definition = definitions.get(key)
    if definition is None:
        kind = kind or ("topic" if definitions is TOPIC_CONFIGS else "dynamic broker")
        return f"Unknown {kind} config name: {key}"
    reason = None if value is None else definition.check(value)
    return f"Invalid value {value} for configuration {key}: {reason}" if reason else None


def validate_topic_configs(configs: Mapping[str, str]) -> None:
    """Raises INVALID_CONFIG naming the first unknown key or bad value."""
    for key, value in configs.items():
        definition = TOPIC_CONFIGS.get(key)
        if definition is None:
            raise KafkaError(
                ErrorCode.INVALID_CONFIG, f"unknown topic config {key!r}; known: {', '.join(sorted(TOPIC_CONFIGS))}"
            )
        reason = definition.check(value)
        if reason:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {key}: {reason}")
