"""A producer writing acks=all batches in a thread of its own while a test injects faults from the main thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

from minikafka.client.producer import DeliveryFailed, Producer, ProducerConfig

BATCH = 20


class BackgroundProducer:
    """Sends batches of `BATCH` records to partition 0 of `topic` and counts the outcomes until stopped."""

    def __init__(self, bootstrap_servers: Sequence[str], topic: str) -> None:
        self.bootstrap_servers = list(bootstrap_servers)
        self.topic = topic
        self.acknowledged = 0
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
        config = ProducerConfig(acks=-1, delivery_timeout_ms=60_000, request_timeout_ms=5_000)
        producer = Producer(self.bootstrap_servers, config)
        try:
            while not self._stopping.is_set():
                futures = [await producer.send(self.topic, b"x" * 100, partition=0) for _ in range(BATCH)]
                for future in futures:
                    try:
                        await future
                        self.acknowledged += 1
                    except DeliveryFailed as error:
                        self.failed.append(error.code.name)
        finally:
            await producer.close()
