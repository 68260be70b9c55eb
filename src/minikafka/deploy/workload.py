"""Client workloads shared by `demo` and `chaos`: producers that write a history line per record, consumers that
write every record they read, and waiting for a topic's ISRs to be full again.

Histories use the formats in docs/events.md (`RUN/history/produce-*.jsonl`, `consume-*.jsonl`), which `analyze`
reads.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from minikafka.client.admin import AdminClient
from minikafka.client.consumer import EARLIEST, Consumer, ConsumerConfig, at_confirmed_log_end
from minikafka.client.in_flight import InFlight
from minikafka.client.produce_command import generated_value, history_line
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig, RecordMetadata, delivery_outcome
from minikafka.client.sasl_exchange import SaslLogin
from minikafka.common.errors import KafkaError
from minikafka.common.tls import TlsFiles
from minikafka.deploy.compacted_workload import record_key
from minikafka.deploy.local_cluster import wait_until


@dataclass
class ProduceCounts:
    acknowledged: int = 0
    failed: int = 0


@dataclass(frozen=True)
class ProducerPlan:
    """One producer: unique values `<name>-<index>` padded to `value_size`, acks=all unless said otherwise."""

    topic: str
    name: str
    history: Path
    records: int | None = None  # None: until `stop` is set
    rate_per_s: float | None = None  # None: as fast as the producer takes them
    value_size: int = 64
    acks: int = -1
    delivery_timeout_ms: int = 60000
    max_outstanding: int = 2000
    tls: TlsFiles | None = None  # a secured gRPC client listener's CA
    sasl: SaslLogin | None = None  # the principal it logs in as (GRPC_SASL_SSL); its history lines name it
    refused_by_acls: bool = False  # the run's ACLs refuse its writes; its history lines say so
    key_count: int | None = None  # keyed records over this many keys (a compacted topic); None: no keys
    first_key: int = 0  # the key of its first record; then each key in turn

    @property
    def principal(self) -> str | None:
        return f"User:{self.sasl.username}" if self.sasl is not None else None


async def produce_with_history(
    bootstrap: list[str],
    plan: ProducerPlan,
    stop: threading.Event | None = None,
    on_sent: Callable[[int], None] | None = None,
) -> ProduceCounts:
    """Send the plan's records, one history line per outcome; returns how many were acknowledged and failed."""
    config = ProducerConfig(acks=plan.acks, delivery_timeout_ms=plan.delivery_timeout_ms)
    producer = Producer(bootstrap, config, tls=plan.tls, sasl=plan.sasl)
    counts = ProduceCounts()
    plan.history.parent.mkdir(parents=True, exist_ok=True)
    in_flight = InFlight(plan.max_outstanding)
    with plan.history.open("w", encoding="utf-8") as out:

        def record(
            key: bytes | None,
            value: bytes,
            sent: float,
            metadata: RecordMetadata | None,
            failure: DeliveryFailed | None,
        ) -> None:
            if failure is None:
                counts.acknowledged += 1
            else:
                counts.failed += 1
            latency_ms = (time.monotonic() - sent) * 1000
            line = history_line(
                plan.topic, None, metadata, value, plan.acks, failure, latency_ms, config.idempotent, key,
                principal=plan.principal, refused_by_acls=plan.refused_by_acls,
            )  # fmt: skip
            out.write(line + "\n")

        async def track(key: bytes | None, value: bytes, sent: float, future: asyncio.Future) -> None:
            record(key, value, sent, *(await delivery_outcome(future)))

        async def refused(key: bytes | None, value: bytes, sent: float, error: KafkaError) -> None:
            record(key, value, sent, None, DeliveryFailed(error.code, error.message, definite=True))

        started = time.monotonic()
        index = 0
        while (plan.records is None or index < plan.records) and not (stop is not None and stop.is_set()):
            if plan.rate_per_s:
                # Pacing, not synchronisation: keep a steady rate of sends.
                await asyncio.sleep(max(0.0, started + index / plan.rate_per_s - time.monotonic()))
            elif index % 200 == 0:
                await asyncio.sleep(0.01)  # a steady stream rather than one burst
            await in_flight.acquire()
            value = generated_value(plan.name, index, plan.value_size)
            key = None if plan.key_count is None else record_key(index, plan.key_count, plan.first_key)
            sent = time.monotonic()
            try:
                future = await producer.send(plan.topic, value, key)
                outcome = track(key, value, sent, future)
            except KafkaError as error:  # refused before it was sent (e.g. its topic's metadata): never written
                outcome = refused(key, value, sent, error)
            in_flight.track(asyncio.ensure_future(outcome))
            if on_sent is not None:
                on_sent(index)
            index += 1
        await in_flight.drain()
    await producer.close()
    return counts


async def consume_to_file(
    bootstrap: list[str],
    topic: str,
    out: Path,
    stop: threading.Event | None = None,
    idle_polls: int = 10,
    config: ConsumerConfig | None = None,
    tls: TlsFiles | None = None,
    sasl: SaslLogin | None = None,
) -> int:
    """Read `topic` from the beginning into `out` (one `consume --json` line per record). Stops when `stop` is set,
    or, without one, after `idle_polls` empty polls in a row (everything below the HWMs was read)."""
    consumer = Consumer(bootstrap, config, tls, sasl)
    await consumer.assign(topic, None, EARLIEST)
    count = idle = 0
    last_record = time.monotonic()
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as stream:
        while not (stop.is_set() if stop else await _final_read_done(consumer, idle, idle_polls, last_record)):
            try:
                records = await consumer.poll()
            except KafkaError:
                records = []  # a live reader during faults: leaders move, the next poll refreshes
            idle = 0 if records else idle + 1
            last_record = time.monotonic() if records else last_record
            for record in records:
                stream.write(json.dumps(record.to_json(), separators=(",", ":")) + "\n")
            count += len(records)
        # Where each partition's read stopped, as `consume --json` ends: analyze tells lost from unread with it.
        await consumer.confirm_log_ends()
        stream.write("".join(json.dumps(end.to_json(), separators=(",", ":")) + "\n" for end in consumer.read_ends()))
    await consumer.close()
    return count


async def _final_read_done(consumer: Consumer, idle: int, idle_polls: int, last_record: float) -> bool:
    """Done two empty polls after reaching the log end its leaders confirm, or as _read_done says: the idle polls
    (each a fetch's max wait) are for a read that cannot reach the end yet."""
    if idle >= 2 and await at_confirmed_log_end(consumer):
        return True
    return _read_done(consumer, idle >= idle_polls, last_record)


def _read_done(consumer: Consumer, idle: bool, last_record: float) -> bool:
    """A final read is done when idle with every partition at its high watermark; a partition without a leader is
    waited for up to default.api.timeout.ms (its read_end line then says why it stopped)."""
    waited_s = time.monotonic() - last_record
    return idle and (consumer.caught_up() or waited_s >= consumer.config.default_api_timeout_ms / 1000)


def isrs_full(admin: AdminClient, topic: str) -> bool:
    """Every partition has a leader and all its replicas in the ISR."""
    try:
        partitions = admin.describe_topics([topic])[0].partitions
    except KafkaError:
        return False
    return all(p.leader >= 0 and sorted(p.isr) == sorted(p.replicas) for p in partitions)


def wait_for_full_isrs(admin: AdminClient, topic: str, timeout_s: float) -> bool:
    return wait_until(lambda: isrs_full(admin, topic), timeout_s, interval_s=0.2)


def lost_acknowledged(produce_histories: list[Path], consumed: Path) -> int:
    """acks=all acknowledged records not read back at their offset with their value (a quick count; `analyze`
    reports them with their rows)."""
    read: dict[tuple[str, int, int], str] = {}
    covered: dict[tuple[str, int], tuple[int, int]] = {}  # (from, below) offsets the read went through
    for line in consumed.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "read_end":
            below = record["high_watermark"] if record["reached"] else record["position"]
            covered[(record["topic"], record["partition"])] = (record["start_offset"] or 0, below or 0)
        else:
            read[(record["topic"], record["partition"], record["offset"])] = record["value"]
    lost = 0
    for history in produce_histories:
        for line in history.read_text().splitlines():
            sent = json.loads(line)
            if sent["error"] is None and sent["acks"] == "all":
                start, below = covered.get((sent["topic"], sent["partition"]), (0, 0))
                unread = read.get((sent["topic"], sent["partition"], sent["offset"])) != sent["value"]
                lost += unread and start <= sent["offset"] < below  # a record the read never reached is unknown
    return lost


@dataclass
class DeniedCounts:
    """A denied producer's attempts as its history says, and what of them showed up anyway."""

    attempts: int = 0
    errors: dict[str, int] = field(default_factory=dict)  # error name -> attempts that got it
    acknowledged: int = 0  # attempts the brokers acknowledged: a write the ACLs should have refused
    visible: int = 0  # values of the producer read back by the final read


def denied_counts(history: Path, consumed: Path) -> DeniedCounts:
    """A quick count of what `analyze`'s NoDeniedWriteVisible checks: every value the producer sent, whatever it
    was told, must be absent from the final read, and none acknowledged."""
    read = {
        json.loads(line).get("value") for line in consumed.read_text().splitlines() if '"type":"read_end"' not in line
    }
    counts = DeniedCounts()
    for line in history.read_text().splitlines():
        sent = json.loads(line)
        counts.attempts += 1
        error = sent["error"] or "NONE"
        counts.errors[error] = counts.errors.get(error, 0) + 1
        counts.acknowledged += sent["error"] is None
        counts.visible += sent["value"] in read
    return counts
