"""Structured event logging: JSON lines to `<dir>/<node>.jsonl` and readable lines to stderr.

Configured once per process by its `__main__`. Every line has `ts` (UTC, microseconds), `node`, `event`,
`level` and the event's fields; docs/events.md is the schema the Spark jobs read.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import structlog

EVENT_SCHEMA_VERSION = 1
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def utc_timestamp() -> str:
    """Now as ISO-8601 UTC with microseconds, the `ts` of every event line."""
    seconds, micros = divmod(time.time_ns() // 1000, 1_000_000)
    return f"{_utc_second(seconds)}.{micros:06d}Z"


@functools.lru_cache(maxsize=4)
def _utc_second(seconds: int) -> str:
    # Formatting the date is most of a timestamp's cost and changes once a second (events come thousands a second).
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


def _add_timestamp(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    event_dict.setdefault("ts", utc_timestamp())
    return event_dict


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    if isinstance(value, Mapping):  # e.g. the metadata image's persistent maps
        return dict(value)
    if hasattr(value, "name") and hasattr(value, "value"):  # enums, e.g. ErrorCode
        return value.name
    return str(value)


def render_json_line(event_dict: dict[str, Any]) -> str:
    """One event as its JSON line, with the fixed fields first."""
    ordered = {key: event_dict[key] for key in ("ts", "node", "level", "event") if key in event_dict}
    ordered.update((key, value) for key, value in event_dict.items() if key not in ordered)
    return json.dumps(ordered, default=_json_default, separators=(",", ":"))


class _JsonFileTee:
    """A processor that appends the JSON line to the event file and passes the event on to stderr."""

    def __init__(self, stream: IO[str] | None) -> None:
        self.stream = stream

    def __call__(self, _logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        if self.stream is not None:
            self.stream.write(render_json_line(event_dict) + "\n")
            self.stream.flush()
        return event_dict


def configure_event_log(
    node: str,
    events_dir: Path | None,
    level: str = "info",
    stderr: IO[str] | None = None,
    console: bool = True,
) -> Path | None:
    """Configure structlog for this process; returns the JSON-lines file path (None without a directory)."""
    path: Path | None = None
    stream: IO[str] | None = None
    if events_dir is not None:
        events_dir.mkdir(parents=True, exist_ok=True)
        path = events_dir / f"{node}.jsonl"
        stream = path.open("a", encoding="utf-8", buffering=1)
    processors: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        _add_timestamp,
        _bind_node(node),
        structlog.processors.format_exc_info,
        _JsonFileTee(stream),
    ]
    if console:
        processors.append(render_readable_line)
        factory: Any = structlog.PrintLoggerFactory(stderr or _CurrentStderr())
    else:
        processors.append(_drop)
        factory = structlog.ReturnLoggerFactory()
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
    return path


_FIRST = ("ts", "level", "event")


def render_readable_line(_logger: Any, _method: str, event_dict: dict[str, Any]) -> str:
    """The stderr line: time, level and event in columns, then the fields sorted as `key=value` (strings bare).
    structlog's ConsoleRenderer does the same at several times the cost, paid on every event of every process."""
    exception = event_dict.pop("exception", None)
    fields = " ".join(
        f"{key}={value}" if isinstance(value, str) else f"{key}={value!r}"
        for key, value in sorted(event_dict.items())
        if key not in _FIRST
    )
    line = f"{event_dict.get('ts', '')} [{event_dict.get('level', ''):<7}] {event_dict.get('event', ''):<30} {fields}"
    return line if exception is None else f"{line}\n{exception}"


class _CurrentStderr:
    """Whatever sys.stderr is at write time (it may be replaced after configuration, e.g. by test capture)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def _bind_node(node: str) -> Any:
    def processor(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
        event_dict.setdefault("node", node)
        return event_dict

    return processor


def _drop(_logger: Any, _method: str, _event_dict: dict[str, Any]) -> str:
    raise structlog.DropEvent
