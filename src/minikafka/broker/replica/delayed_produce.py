"""The pure part of the delayed-produce purgatory: acks=all writes waiting for the HWM (Kafka's DelayedProduce).

Each waiting produce needs the HWM at `required_offset` (its last offset + 1). When the HWM gets there it
completes, or fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR is then below min.insync.replicas (Kafka's
Partition.checkEnoughReplicasReachOffset: a shrunk ISR alone fails nothing). It expires with REQUEST_TIMED_OUT at
its deadline, and fails with whatever error the shell gives when leadership moves away.
The shell keeps the futures; this keeps the ids and decides.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

import structlog

from minikafka.common.errors import ErrorCode


@dataclass(frozen=True)
class PendingProduce:
    request_id: Hashable
    required_offset: int
    deadline_ms: int


@dataclass(frozen=True)
class ProduceCompletion:
    request_id: Hashable
    error: ErrorCode  # NONE: acknowledged


@dataclass(frozen=True)
class DelayedProduceQueue:
    label: str
    pending: tuple[PendingProduce, ...] = ()

    def add(self, request: PendingProduce) -> DelayedProduceQueue:
        return DelayedProduceQueue(self.label, self.pending + (request,))

    def check(
        self, high_watermark: int, isr_size: int, min_insync_replicas: int, now_ms: int
    ) -> tuple[DelayedProduceQueue, tuple[ProduceCompletion, ...]]:
        """Answer what the HWM passed (NOT_ENOUGH_REPLICAS_AFTER_APPEND where the ISR is below min ISR), expire
        what is overdue."""
        if self._nothing_due(high_watermark, now_ms):
            return self, ()
        done: list[ProduceCompletion] = []
        still: list[PendingProduce] = []
        for request in self.pending:
            if high_watermark >= request.required_offset and isr_size < min_insync_replicas:
                error = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
                structlog.get_logger().info(
                    "produce_failed_not_enough_replicas_after_append",
                    partition=self.label,
                    required_offset=request.required_offset,
                    expected_min_isr=min_insync_replicas,
                    actual_isr_size=isr_size,
                )
            elif high_watermark >= request.required_offset:
                error = ErrorCode.NONE
            elif now_ms >= request.deadline_ms:
                error = ErrorCode.REQUEST_TIMED_OUT
                structlog.get_logger().info(
                    "produce_timed_out",
                    partition=self.label,
                    required_offset=request.required_offset,
                    high_watermark=high_watermark,
                    deadline_ms=request.deadline_ms,
                )
            else:
                still.append(request)
                continue
            done.append(ProduceCompletion(request.request_id, error))
        return DelayedProduceQueue(self.label, tuple(still)), tuple(done)

    def _nothing_due(self, high_watermark: int, now_ms: int) -> bool:
        """Checked on every HWM move: the common answer without building a new queue. Produces wait in append
        order, so none is passed while the HWM is below the first one's required offset."""
        if not self.pending:
            return True
        if high_watermark >= self.pending[0].required_offset:
            return False
        return all(now_ms < request.deadline_ms for request in self.pending)

    def fail_all(self, error: ErrorCode) -> tuple[DelayedProduceQueue, tuple[ProduceCompletion, ...]]:
        """Leadership moved (or we fenced ourselves): nobody will answer these otherwise."""
        return DelayedProduceQueue(self.label), tuple(ProduceCompletion(r.request_id, error) for r in self.pending)

    def next_deadline_ms(self) -> int | None:
        return min((r.deadline_ms for r in self.pending), default=None)
