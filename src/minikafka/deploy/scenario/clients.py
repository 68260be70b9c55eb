"""The scenario's clients: acks=all/acks=1 writes, a producer running while faults happen, the final read, and
the client histories `analyze` reads (docs/events.md). Tests of the same scenarios use these too.

grpc.aio ties its completion queue to the first event loop of the process, so every client coroutine of a run
goes to one loop living in a thread of its own (`ClientLoop`).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Coroutine, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import grpc

from minikafka.client.consumer import EARLIEST, Consumer, at_confirmed_log_end
from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig, RecordMetadata
from minikafka.common.errors import ErrorCode
from minikafka.common.event_log import utc_timestamp
from minikafka.common.record_batch import Record, build_batch
from minikafka.pb import broker_pb2, broker_pb2_grpc

T = TypeVar("T")


@dataclass(frozen=True)
class AckedWrite:
    offset: int
    value: str
    ts: str  # when the acknowledgement arrived


def _offset(metadata: RecordMetadata) -> int:
    """The offset an acknowledgement gives: the scenarios write with acks 1 or all, which always give one."""
    if metadata.offset is None:
        raise ValueError("an acks=0 write has no offset: the scenarios write with acks 1 or all")
    return metadata.offset


class ClientLoop:
    """One asyncio loop in a daemon thread; `run` waits for a coroutine, `submit` starts one."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="scenario-clients", daemon=True)
        self._thread.start()

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def run(self, coroutine: Coroutine[Any, Any, T], timeout_s: float = 300) -> T:
        return self.submit(coroutine).result(timeout_s)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


async def produce_acked(
    bootstrap: Sequence[str],
    topic: str,
    count: int,
    acks: int = -1,
    prefix: str = "r",
    one_batch_per_record: bool = False,
) -> list[AckedWrite]:
    """`count` writes to partition 0; the acknowledged ones. One batch per record keeps a follower's catch-up slow
    (with replica.fetch.max.bytes=1 it fetches one batch per request)."""
    config = (
        ProducerConfig(acks=acks, linger_ms=0, batch_size=1, max_in_flight_requests_per_connection=5)
        if one_batch_per_record
        else ProducerConfig(acks=acks)
    )
    producer = Producer(list(bootstrap), config)
    try:
        sent = [(f"{prefix}-{i:05d}", await producer.send(topic, f"{prefix}-{i:05d}".encode(), partition=0))
                for i in range(count)]  # fmt: skip
        acked = []
        for value, future in sent:
            try:
                acked.append(AckedWrite(_offset(await future), value, utc_timestamp()))
            except DeliveryFailed:
                continue
        return acked
    finally:
        await producer.close()


class RunningProducer:
    """acks=all batches of 20 to partition 0 until stopped, on the run's client loop, counting the outcomes."""

    def __init__(self, loop: ClientLoop, bootstrap: Sequence[str], topic: str, delivery_timeout_ms: int = 3000) -> None:
        self.topic = topic
        self.acked: list[AckedWrite] = []
        self.failed: list[str] = []  # error names of failed deliveries
        self._stopping = False
        self._done = loop.submit(self._produce(list(bootstrap), delivery_timeout_ms))

    async def _produce(self, bootstrap: list[str], delivery_timeout_ms: int) -> None:
        request_timeout_ms = min(5000, delivery_timeout_ms // 2)
        config = ProducerConfig(acks=-1, delivery_timeout_ms=delivery_timeout_ms, request_timeout_ms=request_timeout_ms)
        producer = Producer(bootstrap, config)
        sent = 0
        try:
            while not self._stopping:
                values = [f"v-{sent + i:06d}" for i in range(20)]
                sent += len(values)
                futures = [(v, await producer.send(self.topic, v.encode(), partition=0)) for v in values]
                for value, future in futures:
                    try:
                        self.acked.append(AckedWrite(_offset(await future), value, utc_timestamp()))
                    except DeliveryFailed as error:
                        self.failed.append(error.code.name)
        finally:
            await producer.close()

    def stop(self, timeout_s: float = 60) -> None:
        self._stopping = True
        self._done.result(timeout_s)


async def read_until_idle(
    consumer: Consumer, idle_polls: int, expected: int | None = None, to_log_end: bool = False
) -> dict[int, str]:
    """offset -> value of what an assigned consumer reads until `idle_polls` polls in a row bring nothing (or it
    has `expected` records); the scenarios write no null value. `to_log_end`: done as soon as two empty polls in a
    row found the read at its confirmed log end, the idle polls (each a fetch's max wait) being for a read that
    cannot reach the end yet, a leader moving say."""
    read: dict[int, str] = {}
    idle = 0
    while idle < idle_polls and (expected is None or len(read) < expected):
        records = await consumer.poll()
        idle = 0 if records else idle + 1
        read.update((r.offset, (r.value or b"").decode()) for r in records)
        if to_log_end and idle >= 2 and await at_confirmed_log_end(consumer):
            break
    return read


async def read_to_log_end(consumer: Consumer, idle_polls: int, expected: int | None = None) -> dict[int, str]:
    """read_until_idle, done early at the confirmed log end."""
    return await read_until_idle(consumer, idle_polls, expected, to_log_end=True)


async def consume_partition(
    bootstrap: Sequence[str], topic: str, expected: int | None = None, ends: list[dict] | None = None
) -> dict[int, str]:
    """offset -> value of partition 0, read from the beginning to its confirmed log end, or until 20 empty polls
    (or `expected` records); with `ends`, also where the read stopped (the `read_end` history lines)."""
    consumer = Consumer(list(bootstrap))
    await consumer.assign(topic, [0], EARLIEST)
    read = await read_to_log_end(consumer, 20, expected)
    if ends is not None:
        await consumer.confirm_log_ends()
        ends.extend(end.to_json() for end in consumer.read_ends())
    await consumer.close()
    return read


def produce_raw(address: str, value: bytes, acks: int, topic: str, timeout_s: float = 3.0) -> tuple[ErrorCode, int]:
    """One record straight to `address` (no client retries or metadata): its error and base offset."""
    request = broker_pb2.ProduceRequest(acks=acks, timeout_ms=int(timeout_s * 1000))
    request.topic_data.add(name=topic).partition_data.add(index=0, records=build_batch([Record(value)]))
    with grpc.insecure_channel(address) as channel:
        try:
            answer = broker_pb2_grpc.BrokerStub(channel).Produce(request, timeout=timeout_s + 2)
        except grpc.RpcError as error:
            timed_out = error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            return (ErrorCode.REQUEST_TIMED_OUT if timed_out else ErrorCode.NETWORK_EXCEPTION), -1
    result = answer.responses[0].partition_responses[0]
    return ErrorCode.of(result.error_code), result.base_offset


def produce_many(address: str, prefix: str, count: int, acks: int, topic: str) -> list[AckedWrite]:
    """`count` single-record Produce calls to one broker; the acknowledged ones."""
    acked = []
    for n in range(count):
        value = f"{prefix}-{n}"
        code, offset = produce_raw(address, value.encode(), acks, topic, timeout_s=1.0)
        if code is ErrorCode.NONE:
            acked.append(AckedWrite(offset, value, utc_timestamp()))
    return acked


def acks_name(acks: int) -> str:
    return "all" if acks == -1 else str(acks)


def write_histories(
    run_dir: Path, topic: str, produced: Sequence[tuple[AckedWrite, str]], read: dict[int, str], ends: list[dict]
) -> None:
    """`RUN/history/produce-<topic>.jsonl` (each acknowledged write with its acks) and `consume-<topic>.jsonl` (the
    final read with its read_end lines, so analyze tells a lost record from one no read reached)."""
    history = run_dir / "history"
    history.mkdir(parents=True, exist_ok=True)
    lines = [
        {"ts": w.ts, "topic": topic, "partition": 0, "offset": w.offset, "value": w.value, "acks": acks,
         "error": None, "latency_ms": None}
        for w, acks in produced
    ]  # fmt: skip
    consumed = [
        {"topic": topic, "partition": 0, "offset": offset, "key": None, "value": value, "leader_epoch": None}
        for offset, value in sorted(read.items())
    ]
    (history / f"produce-{topic}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (history / f"consume-{topic}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in consumed + ends))
