"""Configuration: Kafka-style `.properties` files loaded into frozen dataclasses.

Each process declares its keys once, as the fields of a frozen dataclass built with `config_key(...)`:
the Kafka key name, default, doc and validator live next to the typed field. `load_config` parses a
properties file plus `--set key=value` overrides against that table; an unknown key, a bad value or a
failed cross-field check raises `ConfigError` whose message names the key (the CLI prints it as one line).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

Validator = Callable[[Any], str | None]
"""Returns None when the value is acceptable, else the reason it is not."""

_CONFIG = "minikafka.config"
_REQUIRED = object()


class ConfigError(ValueError):
    """A configuration problem; `str(error)` is a one-line message naming the key."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class ConfigKey:
    name: str
    doc: str
    validator: Validator | None
    required: bool


def config_key(
    name: str,
    default: Any = _REQUIRED,
    doc: str = "",
    validator: Validator | None = None,
) -> Any:
    """A dataclass field bound to the Kafka config key `name` (omit `default` for a required key)."""
    meta = {_CONFIG: ConfigKey(name=name, doc=doc, validator=validator, required=default is _REQUIRED)}
    if default is _REQUIRED:
        return dataclasses.field(metadata=meta)
    if isinstance(default, list | dict | set):
        raise TypeError(f"mutable default for {name}; use a tuple")
    return dataclasses.field(default=default, metadata=meta)


# ---- validators ----


def at_least(minimum: float) -> Validator:
    return lambda v: None if v >= minimum else f"must be at least {minimum}"


def between(low: float, high: float) -> Validator:
    return lambda v: None if low <= v <= high else f"must be between {low} and {high}"


def one_of(*allowed: str) -> Validator:
    return lambda v: None if v in allowed else f"must be one of {', '.join(allowed)}"


def subset_of(*allowed: str) -> Validator:
    def check(values: tuple[str, ...]) -> str | None:
        bad = [v for v in values if v not in allowed]
        return f"unknown value(s) {', '.join(bad)}; allowed: {', '.join(allowed)}" if bad else None

    return check


# ---- properties files ----


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parse Java `.properties` text: `key=value`, `key:value` or `key value`; `#`/`!` comments; `\\` continues."""
    result: dict[str, str] = {}
    logical: list[str] = []
    start_line = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip() if not logical else raw.lstrip()
        if not logical:
            if not line or line[0] in "#!":
                continue
            start_line = number
        if _ends_with_continuation(line):
            logical.append(line[:-1])
            continue
        logical.append(line)
        entry = "".join(logical)
        logical = []
        key, value = _split_entry(entry, f"{source}:{start_line}")
        if key in result:
            raise ConfigError(f"{source}:{start_line}: duplicate key '{key}'", key)
        result[key] = value
    if logical:
        raise ConfigError(f"{source}:{start_line}: line continuation at end of file", None)
    return result


def _ends_with_continuation(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_entry(entry: str, where: str) -> tuple[str, str]:
    for index, char in enumerate(entry):
        if char in "=:":
            key, value = entry[:index].strip(), entry[index + 1 :].strip()
            break
        if char.isspace():
            key, value = entry[:index], entry[index:].strip()
            if value[:1] in ("=", ":"):
                value = value[1:].strip()
            break
    else:
        raise ConfigError(f"{where}: malformed line '{entry}' (expected key=value)", None)
    if not key:
        raise ConfigError(f"{where}: empty key in '{entry}'", None)
    return key, value


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """`--set key=value` arguments as a mapping; a pair without `=` is an error."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {pair!r}: expected key=value", None)
        result[key.strip()] = value.strip()
    return result


# ---- loading ----

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")  # a config is a dataclass, one field per key


def config_keys(cls: type) -> list[tuple[dataclasses.Field[Any], ConfigKey]]:
    """The (field, key) table of a config dataclass, in declaration order."""
    return [(f, f.metadata[_CONFIG]) for f in dataclasses.fields(cls) if _CONFIG in f.metadata]


def load_config(
    cls: type[T],
    properties: Mapping[str, str],
    source: str = "<config>",
    allow_unknown: Iterable[str] = (),
) -> T:
    """Build `cls` from string properties; checks every key, type and validator, then `cls.validate()`."""
    table = config_keys(cls)
    by_name = {key.name: (f, key) for f, key in table}
    allowed_unknown = set(allow_unknown)
    hints = typing.get_type_hints(cls) if properties else {}  # once: it evaluates every annotation of the class
    values: dict[str, Any] = {}
    for name, text in properties.items():
        if name not in by_name:
            if name in allowed_unknown:
                continue
            raise ConfigError(f"{source}: unknown config key '{name}'", name)
        f, key = by_name[name]
        values[f.name] = _convert(key.name, text, hints[f.name], source)
    for f, key in table:
        if f.name not in values and key.required:
            raise ConfigError(f"{source}: missing required config key '{key.name}'", key.name)
    for f, key in table:
        if key.validator is None:
            continue
        value = values.get(f.name, f.default)
        reason = key.validator(value)
        if reason:
            raise ConfigError(f"{source}: invalid value {_show(value)} for '{key.name}': {reason}", key.name)
    # a config that keeps which keys were given (as NodeConfig does, for DescribeConfigs' sources) gets them
    if any(f.name == "set_keys" for f in dataclasses.fields(cls)):
        values["set_keys"] = frozenset(name for name in properties if name in by_name)
    instance = cls(**values)
    check = getattr(instance, "validate", None)
    if check is not None:
        try:
            check()
        except ConfigError as error:
            raise ConfigError(f"{source}: {error}", error.key) from None
    return instance


def load_config_file(
    cls: type[T], path: Path, overrides: Mapping[str, str] | None = None, allow_unknown: Iterable[str] = ()
) -> T:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror}", None) from None
    properties = parse_properties(text, str(path))
    properties.update(overrides or {})
    return load_config(cls, properties, str(path), allow_unknown)


def to_properties(instance: Any) -> str:
    """Render a config dataclass back to `.properties` text (every key, defaults included)."""
    lines = []
    for f, key in config_keys(type(instance)):
        value = getattr(instance, f.name)
        lines.append(f"{key.name}={_show(value)}")
    return "\n".join(lines) + "\n"


def describe_keys(cls: type) -> list[dict[str, Any]]:
    """The key table as data (name, type, default, doc) for docs and `--help`."""
    rows = []
    hints = typing.get_type_hints(cls)
    for f, key in config_keys(cls):
        rows.append(
            {
                "name": key.name,
                "type": _type_name(hints[f.name]),
                "default": None if key.required else f.default,
                "required": key.required,
                "doc": key.doc,
            }
        )
    return rows


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is tuple:
        return "list"
    if _is_optional(tp):
        return _type_name(_unwrap_optional(tp)) + "?"
    return getattr(tp, "__name__", str(tp))


def _is_optional(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def _unwrap_optional(tp: Any) -> Any:
    return next(a for a in typing.get_args(tp) if a is not type(None))


def _convert(name: str, text: str, tp: Any, source: str) -> Any:
    if _is_optional(tp):
        if text == "":
            return None
        tp = _unwrap_optional(tp)
    try:
        if tp is bool:
            lowered = text.lower()
            if lowered not in ("true", "false"):
                raise ValueError("expected true or false")
            return lowered == "true"
        if tp is int:
            return int(text)
        if tp is float:
            return float(text)
        if tp is str:
            return text
        if typing.get_origin(tp) is tuple:
            return tuple(item.strip() for item in text.split(",") if item.strip())
    except ValueError as error:
        expected = _type_name(tp)
        raise ConfigError(
            f"{source}: invalid value {text!r} for '{name}': expected {expected} ({error})", name
        ) from None
    raise TypeError(f"unsupported config type {tp!r} for {name}")


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(str(v) for v in value)
    if value is None:
        return ""
    return str(value)
