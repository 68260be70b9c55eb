"""Kafka's rules for topic names (org.apache.kafka.common.internals.Topic): legal characters, length, collisions."""

from __future__ import annotations

import re
from collections.abc import Iterable

from minikafka.common.errors import ErrorCode, KafkaError

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
GROUP_METADATA_TOPIC_NAME = "__consumer_offsets"
TRANSACTION_STATE_TOPIC_NAME = "__transaction_state"
# The coordinators' own topics: clients may read them but never append to, delete or grow them.
INTERNAL_TOPICS = frozenset({GROUP_METADATA_TOPIC_NAME, TRANSACTION_STATE_TOPIC_NAME})


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def validate_name(name: str) -> None:
    """Raises INVALID_TOPIC_EXCEPTION unless `name` is a legal topic name."""
    if not name:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, "topic name cannot be '.' or '..'")
    if len(name) > MAX_NAME_LENGTH:
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name is illegal, it is {len(name)} characters long, more than {MAX_NAME_LENGTH}",
        )
    if not _LEGAL.match(name):
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} is illegal: it contains a character other than ASCII alphanumerics, '.', '_' and '-'",
        )


def collision_form(name: str) -> str:
    """'.' and '_' become the same character in metric names, so 'a.b' and 'a_b' cannot both exist."""
    return name.replace(".", "_")


def check_collision(name: str, existing: Iterable[str]) -> None:
    """Raises INVALID_TOPIC_EXCEPTION when `name` differs from an existing topic only by '.' against '_'."""
    unified = collision_form(name)
    for other in existing:
        if other != name and collision_form(other) == unified:
            raise KafkaError(
                ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic {name!r} collides with existing topic {other!r}"
            )
