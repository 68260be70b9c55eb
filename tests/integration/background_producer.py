"""A producer writing acks=all batches in a thread of its own while a test injects faults from the main thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig
from minikafka.common.event_log import utc_timestamp

BATCH = 20


class BackgroundProducer:
    """Sends batches of `BATCH` records to partition 0 of `topic` and counts the outcomes until stopped."""

    def __init__(self, bootstrap_servers: Sequence[str], topic: str, delivery_timeout_ms: int = 60_000) -> None:
        self.bootstrap_servers = list(bootstrap_servers)
        self.topic = topic
        self.delivery_timeout_ms = delivery_timeout_ms
        self.acknowledged = 0
        self.acked: list[tuple[int, str, str]] = []  # (offset, value, ts of the acknowledgement), in order
        self.failed: list[str] = []  # error names of failed deliveries
        self.crashed: BaseException | None = None
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="background-producer", daemon=True)

    def __enter__(self) -> BackgroundProducer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stopping.set()
        self._thread.join(timeout=60)

    def _run(self) -> None:
        try:
            asyncio.run(self._produce())
        except BaseException as error:  # reported by the test through `crashed`
            self.crashed = error

    async def _produce(self) -> None:
        request_timeout_ms = min(5_000, self.delivery_timeout_ms // 2)
        config = ProducerConfig(
            acks=-1, delivery_timeout_ms=self.delivery_timeout_ms, request_timeout_ms=request_timeout_ms
        )
        producer = Producer(self.bootstrap_servers, config)
        sent = 0
        try:
            while not self._stopping.is_set():
                values = [f"v-{sent + i:06d}" for i in range(BATCH)]
                sent += BATCH
                futures = [(v, await producer.send(self.topic, v.encode(), partition=0)) for v in values]
                for value, future in futures:
                    try:
                        metadata = await future
                        self.acked.append((metadata.offset, value, utc_timestamp()))
                        self.acknowledged += 1
                    except DeliveryFailed as error:
                        self.failed.append(error.code.name)
        finally:
            await producer.close()
