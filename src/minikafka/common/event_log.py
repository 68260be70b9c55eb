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
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import IO, Any, Protocol

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


_JSON = json.JSONEncoder(default=_json_default, separators=(",", ":"))  # built once: json.dumps builds one a call
_FIXED = ("ts", "node", "level", "event")


def render_json_line(event_dict: dict[str, Any]) -> str:
    """One event as its JSON line, with the fixed fields first."""
    ordered = {key: event_dict[key] for key in _FIXED if key in event_dict}
    ordered.update((key, value) for key, value in event_dict.items() if key not in ordered)
    return _JSON.encode(ordered)


class _EventWriter:
    """The one structlog processor: stamps `ts`, `node` and `level`, appends the JSON line to the event file and
    writes the readable line to stderr. Each event is written at once, unbuffered (a killed process loses none);
    the events of one `log_events` call are written together."""

    def __init__(self, node: str, stream: IO[bytes] | None, stderr: TextSink | None, min_level: int) -> None:
        self.node = node
        self.min_level = min_level  # the filtering logger's: `log_events` applies it too
        self.stream = stream
        self.stderr = stderr
        self.json_lines: list[str] = []
        self.readable_lines: list[str] = []

    def __call__(self, _logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> str:
        self.add(_logger, method, event_dict)
        self.write()
        return ""

    def add(self, _logger: Any, method: str, event_dict: MutableMapping[str, Any]) -> None:
        """Render the event into the lines the next `write` writes."""
        if "exc_info" in event_dict:
            event_dict = structlog.processors.format_exc_info(_logger, method, event_dict)
        ordered = {
            "ts": event_dict.pop("ts", None) or utc_timestamp(),
            "node": event_dict.pop("node", self.node),
            "level": method,  # the filtering logger calls its processors with the level's name
            "event": event_dict.pop("event", None),
        }
        ordered.update(event_dict)
        if self.stream is not None:
            self.json_lines.append(_JSON.encode(ordered) + "\n")
        if self.stderr is not None:
            self.readable_lines.append(render_readable_line(ordered) + "\n")

    def write(self) -> None:
        if self.json_lines:
            assert self.stream is not None
            self.stream.write("".join(self.json_lines).encode())
            self.json_lines.clear()
        if self.readable_lines:
            assert self.stderr is not None
            self.stderr.write("".join(self.readable_lines))
            self.readable_lines.clear()


def log_events(logger: Any, method: str, events: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Log each (event, fields) as `logger.<method>(event, **fields)` would (`logger` unbound), in one write per
    output: straight to the configured writer, without structlog's per-call work (a quarter of an event's cost),
    for the per-record replay events of a commit, which every controller writes (one write per event per output
    was more than half of an event's cost in a loaded controller). Without the writer (structlog configured
    otherwise, e.g. a test capturing logs) each event goes through `logger`."""
    writers = [p for p in structlog.get_config()["processors"] if isinstance(p, _EventWriter)]
    if not writers:
        for event, fields in events:
            getattr(logger, method)(event, **fields)
        return
    level = _LEVELS[method]
    events = list(events)
    for writer in writers:
        if level < writer.min_level:
            continue
        for event, fields in events:
            writer.add(None, method, {**fields, "event": event})
        writer.write()


def configure_event_log(
    node: str,
    events_dir: Path | None,
    level: str = "info",
    stderr: IO[str] | None = None,
    console: bool = True,
) -> Path | None:
    """Configure structlog for this process; returns the JSON-lines file path (None without a directory)."""
    path: Path | None = None
    stream: IO[bytes] | None = None
    if events_dir is not None:
        events_dir.mkdir(parents=True, exist_ok=True)
        path = events_dir / f"{node}.jsonl"
        stream = path.open("ab", buffering=0)
    structlog.configure(
        processors=[_EventWriter(node, stream, (stderr or _CurrentStderr()) if console else None, _LEVELS[level])],
        wrapper_class=structlog.make_filtering_bound_logger(_LEVELS[level]),
        logger_factory=structlog.ReturnLoggerFactory(),  # the writer has written the event: nothing left to log
        cache_logger_on_first_use=True,
    )
    return path


_COLUMNS = ("ts", "level", "event")


def render_readable_line(event_dict: dict[str, Any]) -> str:
    """The stderr line: time, level and event in columns, then the fields in their order as `key=value` (strings
    bare). structlog's ConsoleRenderer does the same at several times the cost, paid on every event of every
    process."""
    exception = event_dict.pop("exception", None)
    fields = " ".join(
        [
            f"{key}={value}" if isinstance(value, str) else f"{key}={value!r}"
            for key, value in event_dict.items()
            if key not in _COLUMNS
        ]
    )
    line = f"{event_dict.get('ts', '')} [{event_dict.get('level', ''):<7}] {event_dict.get('event', ''):<30} {fields}"
    return line if exception is None else f"{line}\n{exception}"


class TextSink(Protocol):
    """Where readable lines go: a text stream, or `_CurrentStderr`."""

    def write(self, text: str, /) -> int: ...


class _CurrentStderr:
    """Whatever sys.stderr is at write time (it may be replaced after configuration, e.g. by test capture)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)  # line-buffered: each write of whole lines reaches the fd at once
