"""acks=all produces waiting for the HWM to pass their batch (Kafka's DelayedProduce purgatory): the shell.

The pure `DelayedProduceQueue` decides what completes, fails or expires, the same queue the broker simulation
drives; this keeps each waiting produce's future and its expiry timer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from minikafka.broker.replica.delayed_produce import DelayedProduceQueue, PendingProduce, ProduceCompletion
from minikafka.broker.replica.partition import Leader
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import RecordError

TIMED_OUT_MESSAGE = "the HWM did not reach the batch in time"


@dataclass(frozen=True)
class ProduceResult:
    """One partition's answer to a Produce."""

    error: ErrorCode
    base_offset: int = -1
    message: str = ""
    record_errors: tuple[RecordError, ...] = ()  # the records at fault, by index in the batch
    log_append_time_ms: int = -1  # the leader's stamp on a LogAppendTime topic's batch; -1: CreateTime


@dataclass
class _Waiting:
    answer: asyncio.Future[ProduceResult]
    base_offset: int
    expiry: asyncio.TimerHandle
    log_append_time_ms: int


class ProducePurgatory:
    """The acks=all produces of one partition, waiting on its leader's HWM."""

    def __init__(self, label: str) -> None:
        self.queue = DelayedProduceQueue(label)
        self._waiting: dict[int, _Waiting] = {}
        self._next_id = 0

    def __len__(self) -> int:
        return len(self._waiting)

    def add(
        self,
        base_offset: int,
        required_offset: int,
        timeout_ms: int,
        now_ms: int,
        recheck: Callable[[], None],
        log_append_time_ms: int = -1,
    ) -> asyncio.Future[ProduceResult]:
        """Wait for the HWM to reach `required_offset`; `recheck` runs at the deadline (to expire it)."""
        loop = asyncio.get_running_loop()
        self._next_id += 1
        request_id = self._next_id
        self.queue = self.queue.add(PendingProduce(request_id, required_offset, now_ms + timeout_ms))
        answer: asyncio.Future[ProduceResult] = loop.create_future()
        self._waiting[request_id] = _Waiting(
            answer, base_offset, loop.call_later(timeout_ms / 1000, recheck), log_append_time_ms
        )
        return answer

    def check(self, leader: Leader, now_ms: int) -> None:
        """Answer what the leader's HWM and ISR now decide."""
        if not self._waiting:
            return
        self.queue, done = self.queue.check(leader.high_watermark, len(leader.isr), leader.effective_min_isr, now_ms)
        self._finish(done)

    def fail_all(self, error: ErrorCode) -> None:
        """Leadership moved, or the broker stops: nobody will answer these otherwise."""
        self.queue, done = self.queue.fail_all(error)
        self._finish(done)

    def _finish(self, done: tuple[ProduceCompletion, ...]) -> None:
        for completion in done:
            waiting = self._waiting.pop(completion.request_id)  # type: ignore[call-overload]
            waiting.expiry.cancel()
            if not waiting.answer.done():
                message = TIMED_OUT_MESSAGE if completion.error == ErrorCode.REQUEST_TIMED_OUT else ""
                stamp = waiting.log_append_time_ms if completion.error == ErrorCode.NONE else -1
                waiting.answer.set_result(
                    ProduceResult(completion.error, waiting.base_offset, message, log_append_time_ms=stamp)
                )
