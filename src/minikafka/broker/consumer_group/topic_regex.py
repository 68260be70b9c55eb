"""Subscriptions by regular expression (ConsumerGroupHeartbeat's SubscribedTopicRegex) as Kafka resolves them: RE2
syntax (Kafka compiles them with RE2/J), matching the whole topic name, over every topic the metadata knows.
RE2 matches in linear time: no expression a client sends can hold up the coordinator, as a backtracking engine's
could."""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Protocol, cast

import re2  # type: ignore[import-untyped]


class InvalidRegex(ValueError):
    pass


class _Pattern(Protocol):
    def fullmatch(self, text: str) -> object | None: ...


def _options() -> object:
    options = re2.Options()
    options.log_errors = False  # a client's bad expression is its error, not a line on the broker's stderr
    return cast(object, options)


_OPTIONS = _options()


@functools.lru_cache(maxsize=256)
def compile_regex(regex: str) -> _Pattern:
    """The compiled expression; InvalidRegex with RE2's reason it is refused."""
    try:
        return cast(_Pattern, re2.compile(regex, options=_OPTIONS))
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        raise InvalidRegex(str(reason)) from error


def matching(regex: str, topics: Iterable[str]) -> frozenset[str]:
    """The topics whose whole name the (already validated) expression matches."""
    pattern = compile_regex(regex)
    return frozenset(topic for topic in topics if pattern.fullmatch(topic) is not None)
