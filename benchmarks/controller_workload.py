"""The controller's write workload for benchmarks: broker registrations and topic creations, each answered once
its records are committed through KRaft.

One workload serves both ways a write reaches the active controller: `call` sends a request by its RPC name
(`BrokerRegistration`, `BrokerHeartbeat`, `CreateTopics`) and returns the response, either as a gRPC call
(benchmarks/run_all.py) or in-process through the servicer a call reaches (`kraft_test_server.py --workload
controller`, the writer inside the leader as pysyncobj's driver is). Entries committed are read off the Raft high
watermark, the unit pysyncobj counts: a registration is one RegisterBroker record, a CreateTopics of one topic is
a TopicRecord and a PartitionRecord per partition (a topic stores only the configs given, and none are).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from minikafka.common.latency_stats import LatencyStats
from minikafka.pb import controller_pb2

Call = Callable[[str, Any], Awaitable[Any]]  # (RPC name, request) -> response
HighWatermark = Callable[[], Awaitable[int]]

FIRST_MEASURED_BROKER_ID = 10000  # ids below are the sequential ones (1000..) and the topics' replicas (1, 2, 3)


@dataclass(frozen=True)
class ControllerWorkload:
    registrations: int  # broker registrations with `outstanding` in flight
    outstanding: int
    topic_partitions: int = 10  # each CreateTopics creates one topic of this many partitions, RF 3
    sequential: int = 200  # registrations one at a time first (the commit latency)

    @property
    def topic_creations(self) -> int:
        return max(1, self.registrations // self.topic_partitions)


class WriteFailed(Exception):
    """The controller answered a workload write with an error."""


def registration_request(broker_id: int) -> controller_pb2.BrokerRegistrationRequest:
    request = controller_pb2.BrokerRegistrationRequest(broker_id=broker_id, incarnation_id=str(uuid.uuid4()))
    request.listeners.add(name="PLAINTEXT", host="127.0.0.1", port=1)
    return request


async def run_controller_workload(call: Call, high_watermark: HighWatermark, workload: ControllerWorkload) -> dict:
    """Registrations one at a time, then (on three registered, unfenced brokers) topic creations and then new
    broker registrations with `outstanding` in flight. The creations go first: thousands of registered (fenced)
    brokers would slow their replica placement, which scans the registered brokers as Kafka's does."""

    async def register(broker_id: int) -> int:
        response = await call("BrokerRegistration", registration_request(broker_id))
        if response.error_code:
            raise WriteFailed(f"registration of broker {broker_id}: {response}")
        return int(response.broker_epoch)

    async def create_topic(index: int) -> None:
        request = controller_pb2.CreateTopicsRequest()
        request.topics.add(name=f"bench-{index}", num_partitions=workload.topic_partitions, replication_factor=3)
        response = await call("CreateTopics", request)
        if response.error_code or response.topics[0].error_code:
            raise WriteFailed(f"creation of bench-{index}: {response}")

    async def in_flight(write: Callable[[int], Awaitable[Any]], items: range) -> dict[str, float]:
        queue = iter(items)

        async def worker() -> None:
            for item in queue:
                await write(item)

        before = await high_watermark()
        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(workload.outstanding)))
        elapsed = time.monotonic() - started
        entries = await high_watermark() - before
        return {
            "writes_per_s": round(len(items) / elapsed, 1),
            "entries_per_s": round(entries / elapsed, 1),
            "entries_per_write": round(entries / len(items), 2),
        }

    sequential = LatencyStats()
    for broker_id in range(1000, 1000 + workload.sequential):
        started = time.monotonic()
        await register(broker_id)
        sequential.record((time.monotonic() - started) * 1000)
    for broker_id in (1, 2, 3):  # the created topics' replicas: registered, then unfenced by heartbeats
        heartbeat = controller_pb2.BrokerHeartbeatRequest(
            broker_id=broker_id, broker_epoch=await register(broker_id), current_metadata_offset=2**62
        )
        while (await call("BrokerHeartbeat", heartbeat)).is_fenced:
            pass
    creations = await in_flight(create_topic, range(workload.topic_creations))
    first = FIRST_MEASURED_BROKER_ID
    registrations = await in_flight(register, range(first, first + workload.registrations))
    summary = sequential.summary()
    return {
        "outstanding": workload.outstanding,
        "sequential_p50_ms": round(summary["p50_ms"] or 0.0, 2),
        "sequential_p99_ms": round(summary["p99_ms"] or 0.0, 2),
        "registrations": registrations,
        "topic_creations": {"partitions": workload.topic_partitions, **creations},
    }
