"""The per-topic configs this cluster understands, declared once with their Kafka names, types and ranges
(Kafka's TopicConfig/LogConfig definitions), so a bad value is refused with the key's name before any request."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from minikafka.common.errors import ErrorCode, KafkaError

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True)
class TopicConfigDef:
    name: str
    kind: str  # Kafka's ConfigDef type: "int", "long", "list" or "boolean"
    check: Callable[[str], str | None]  # None: acceptable; else why not


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


def _only(value: str, why: str) -> Callable[[str], str | None]:
    return lambda text: None if text.strip() == value else f"only {value!r} is supported ({why})"


TOPIC_CONFIGS: Mapping[str, TopicConfigDef] = {
    d.name: d
    for d in (
        TopicConfigDef("min.insync.replicas", "int", _number("int", 1)),
        TopicConfigDef("segment.bytes", "int", _number("int", 14)),
        TopicConfigDef("retention.ms", "long", _number("long", -1)),
        TopicConfigDef("retention.bytes", "long", _number("long", -1)),
        TopicConfigDef("flush.messages", "long", _number("long", 1)),
        TopicConfigDef("flush.ms", "long", _number("long", 0)),
        TopicConfigDef("cleanup.policy", "list", _only("delete", "log compaction is not implemented")),
        TopicConfigDef(
            "unclean.leader.election.enable", "boolean", _only("false", "unclean elections are not implemented")
        ),
    )
}


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
