"""InitProducerId: decoded for the request layer (`broker.requests.init_producer_id`, the gRPC front end's path too)
and its answer encoded."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.requests.init_producer_id import handle_init_producer_id
from minikafka.common.errors import ErrorCode

INIT_PRODUCER_ID = 22


async def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(INIT_PRODUCER_ID, request.header.api_version)
    body = request.body
    timeout = getattr(body, "transaction_timeout", None)
    expected = (getattr(body, "producer_id", -1), getattr(body, "producer_epoch", -1))  # v3+ (KIP-360)
    answer = await handle_init_producer_id(
        ctx.manager,
        body.transactional_id,
        ctx.transactions,
        int(timeout.total_seconds() * 1000) if timeout is not None else 60000,
        expected if expected[0] >= 0 else None,
        caller=ctx.caller,
    )
    if answer.error == ErrorCode.PRODUCER_FENCED and request.header.api_version < 4:
        answer.error = ErrorCode.INVALID_PRODUCER_EPOCH  # before KIP-588 clients knew no PRODUCER_FENCED
    return build(
        cls,
        throttle_time=0,
        error_code=answer.error,
        producer_id=answer.producer_id,
        producer_epoch=answer.producer_epoch,
    )
