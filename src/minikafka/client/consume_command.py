"""`minikafka consume`: records below the high watermark, as JSON lines or values.

With `--json`, after the records each assigned partition gets one `read_end` line (docs/events.md, consume
history): where its read stopped, the high watermark its leader last reported, and the error that stopped it, so
`analyze` can tell a record that is not there from one the read never reached.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from minikafka.client.consumer import EARLIEST, LATEST, READ_COMMITTED, READ_UNCOMMITTED, Consumer, ConsumerConfig
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.cli_support import CliError
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.tls import TlsFiles

# --consumer-property keys: Kafka's consumer config names, each with the ConsumerConfig field it sets.
CONSUMER_PROPERTIES = {
    "default.api.timeout.ms": "default_api_timeout_ms",
    "request.timeout.ms": "request_timeout_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "fetch.max.wait.ms": "fetch_max_wait_ms",
    "fetch.min.bytes": "fetch_min_bytes",
    "fetch.max.bytes": "fetch_max_bytes",
    "max.partition.fetch.bytes": "max_partition_fetch_bytes",
}
OFFSET_NAMES = {"earliest": EARLIEST, "latest": LATEST}


@dataclass(frozen=True)
class ConsumeOptions:
    topic: str
    partition: int | None = None
    from_beginning: bool = False
    offset: str | int | None = None  # an offset, 'earliest' or 'latest' (-2 and -1 also name them)
    max_messages: int | None = None
    timeout_ms: int = 10000  # exit after this long without a new record, as Kafka's console consumer
    as_json: bool = False
    consumer_properties: Sequence[str] = field(default_factory=tuple)  # KEY=VALUE
    isolation_level: str = "read_uncommitted"  # or read_committed (kafka-console-consumer's --isolation-level)


def parse_offset(text: str | int) -> int:
    """kafka-console-consumer's --offset: 'earliest', 'latest' or a non-negative offset (-2 and -1 as aliases)."""
    value = str(text).strip().lower()
    if value in OFFSET_NAMES:
        return OFFSET_NAMES[value]
    try:
        offset = int(value)
    except ValueError:
        offset = None
    if offset is None or offset < EARLIEST:
        raise CliError(
            f"INVALID_REQUEST: the provided offset value '{text}' is incorrect. Valid values are 'earliest', "
            "'latest', or a non-negative long."
        )
    return offset


def start_offset(options: ConsumeOptions) -> int:
    """The offset (or EARLIEST/LATEST) to start from; --offset names one partition, as Kafka requires."""
    if options.offset is None:
        return EARLIEST if options.from_beginning else LATEST
    if options.partition is None:
        raise CliError("INVALID_REQUEST: the partition is required when offset is specified (--partition)")
    return parse_offset(options.offset)


def consumer_config(properties: Sequence[str], isolation_level: str = "read_uncommitted") -> ConsumerConfig:
    fields: dict[str, Any] = {}  # ConsumerConfig's keyword arguments, by the properties given
    for prop in properties:
        key, sep, value = prop.partition("=")
        if not sep or key not in CONSUMER_PROPERTIES:
            raise CliError(
                f"INVALID_CONFIG: bad --consumer-property {prop!r}: use KEY=VALUE with KEY one of "
                f"{', '.join(CONSUMER_PROPERTIES)}"
            )
        try:
            number = int(value)
        except ValueError:
            number = -1
        if number < 0:
            raise CliError(f"INVALID_CONFIG: {key} must be a non-negative integer, not {value!r}")
        fields[CONSUMER_PROPERTIES[key]] = number
    fields["isolation_level"] = READ_COMMITTED if isolation_level == "read_committed" else READ_UNCOMMITTED
    return ConsumerConfig(**fields)


def _write(options: ConsumeOptions, records: list, consumed: int) -> int:
    for record in records:
        if options.max_messages is not None and consumed >= options.max_messages:
            break
        if options.as_json:
            sys.stdout.write(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
        else:
            sys.stdout.write((record.value or b"").decode("utf-8", "replace") + "\n")
        consumed += 1
    sys.stdout.flush()
    return consumed


async def _read(consumer: Consumer, options: ConsumeOptions) -> int:
    """Poll until --max-messages, or until --timeout-ms passed without a record while every partition is caught
    up; a partition whose leader cannot be reached is waited for up to default.api.timeout.ms instead."""
    consumed = 0
    last_progress = time.monotonic()
    patience_ms = max(options.timeout_ms, consumer.config.default_api_timeout_ms)
    while options.max_messages is None or consumed < options.max_messages:
        records = await consumer.poll()
        consumed = _write(options, records, consumed)
        if records:
            last_progress = time.monotonic()
        idle_ms = (time.monotonic() - last_progress) * 1000
        if idle_ms >= (options.timeout_ms if consumer.caught_up() else patience_ms):
            break
    return consumed


def _finish(consumer: Consumer, options: ConsumeOptions, consumed: int) -> None:
    """Write each partition's read_end line (with --json) and say on stderr which reads did not complete."""
    ends = consumer.read_ends()
    if options.as_json:
        sys.stdout.write("".join(json.dumps(end.to_json(), separators=(",", ":")) + "\n" for end in ends))
        sys.stdout.flush()
    print(f"consumed {consumed} records", file=sys.stderr)
    stopped = [end for end in ends if end.error is not None]
    if stopped:
        reasons = ", ".join(f"{e.topic}-{e.partition} at offset {e.position}: {e.error}" for e in stopped)
        first = next(e.error for e in ends if e.error is not None)
        raise KafkaError(ErrorCode[first], f"the read did not reach the high watermark of {reasons}")


async def run_consume(
    bootstrap: list[str], options: ConsumeOptions, tls: TlsFiles | None = None, sasl: SaslLogin | None = None
) -> int:
    start = start_offset(options)
    consumer = Consumer(bootstrap, consumer_config(options.consumer_properties, options.isolation_level), tls, sasl)
    consumed = 0
    try:
        try:
            await consumer.assign(options.topic, None if options.partition is None else [options.partition], start)
            consumed = await _read(consumer, options)
            await consumer.confirm_log_ends()
        finally:
            if consumer.fetch_states:
                _finish(consumer, options, consumed)
    finally:
        await consumer.close()
    return consumed
