"""`minikafka consume`: records below the high watermark, as JSON lines or values."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass

from client.consumer import EARLIEST, LATEST, Consumer


@dataclass(frozen=True)
class ConsumeOptions:
    topic: str
    partition: int | None = None
    from_beginning: bool = False
    offset: int | None = None
    max_messages: int | None = None
    timeout_ms: int = 10000  # exit after this long without a new record, as Kafka's console consumer
    as_json: bool = False


async def run_consume(bootstrap: list[str], options: ConsumeOptions) -> int:
    consumer = Consumer(bootstrap)
    consumed = 0
    try:
        start = options.offset if options.offset is not None else (EARLIEST if options.from_beginning else LATEST)
        await consumer.assign(options.topic, None if options.partition is None else [options.partition], start)
        last_record = time.monotonic()
        while options.max_messages is None or consumed < options.max_messages:
            records = await consumer.poll()
            if records:
                last_record = time.monotonic()
            elif (time.monotonic() - last_record) * 1000 >= options.timeout_ms:
                break
            for record in records:
                if options.max_messages is not None and consumed >= options.max_messages:
                    break
                if options.as_json:
                    sys.stdout.write(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
                else:
                    sys.stdout.write((record.value or b"").decode("utf-8", "replace") + "\n")
                consumed += 1
            sys.stdout.flush()
    finally:
        await consumer.close()
    print(f"consumed {consumed} records", file=sys.stderr)
    return consumed
