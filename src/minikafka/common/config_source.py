"""Kafka's ConfigSource: where a described config's value comes from, by its DescribeConfigs code and name (the
brokers answer with the codes; the tools print the names)."""

from __future__ import annotations

from enum import IntEnum


class ConfigSource(IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8

    @classmethod
    def name_of(cls, code: int) -> str:
        """The name of `code`, or the code itself for one Kafka has not defined."""
        try:
            return cls(int(code)).name
        except ValueError:
            return str(code)
