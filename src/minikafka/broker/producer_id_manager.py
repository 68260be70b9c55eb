"""Kafka's RPCProducerIdManager: a broker hands out producer ids from a block the controller allocated to it
(AllocateProducerIds), and asks for the next block before this one runs out."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from minikafka.broker.controller_client import ControllerClient
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.pb import controller_pb2

PREFETCH_FRACTION = 0.9  # Kafka asks for the next block once 90% of the current one is used
RETRY_BACKOFF_S = 0.1
ATTEMPTS = 20


@dataclass(frozen=True)
class ProducerIdBlock:
    start: int
    length: int

    @property
    def end(self) -> int:
        return self.start + self.length


class ProducerIdManager:
    def __init__(self, controller: ControllerClient, broker_id: int, broker_epoch: Callable[[], int]) -> None:
        self.controller = controller
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._current: ProducerIdBlock | None = None
        self._next_id = 0
        self._next_block: asyncio.Task[ProducerIdBlock | None] | None = None

    async def generate(self) -> int:
        """A producer id never handed out before, anywhere in the cluster; COORDINATOR_LOAD_IN_PROGRESS (which
        clients retry) when no block could be had from the controller."""
        while self._current is None or self._next_id >= self._current.end:
            block = await self._fetch_next_block()
            if block is None:
                raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "no producer id block from the controller")
            # Callers waiting together get the same block: only the first installs it, never an older one.
            if self._current is None or (self._next_id >= self._current.end and block.start >= self._current.end):
                self._current, self._next_id = block, block.start
        producer_id = self._next_id
        self._next_id += 1
        if self._next_id - self._current.start >= PREFETCH_FRACTION * self._current.length:
            self._prefetch()
        return producer_id

    def _prefetch(self) -> None:
        if self._next_block is None:
            self._next_block = asyncio.create_task(self._allocate())

    async def _fetch_next_block(self) -> ProducerIdBlock | None:
        self._prefetch()
        assert self._next_block is not None
        task = self._next_block
        block = await task
        if self._next_block is task:
            self._next_block = None
        return block

    async def _allocate(self) -> ProducerIdBlock | None:
        for _attempt in range(ATTEMPTS):
            request = controller_pb2.AllocateProducerIdsRequest(
                broker_id=self.broker_id, broker_epoch=self.broker_epoch()
            )
            response = await self.controller.call("AllocateProducerIds", request)
            if response is not None and response.error_code == ErrorCode.NONE:
                block = ProducerIdBlock(response.producer_id_start, response.producer_id_len)
                structlog.get_logger().info("producer_id_block_received", start=block.start, length=block.length)
                return block
            await asyncio.sleep(RETRY_BACKOFF_S)
        return None
