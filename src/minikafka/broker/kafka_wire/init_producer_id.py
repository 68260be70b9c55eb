"""InitProducerId: decoded for the request layer (`broker.requests.init_producer_id`, the gRPC front end's path too)
and its answer encoded."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.broker.requests.init_producer_id import handle_init_producer_id

INIT_PRODUCER_ID = 22


async def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(INIT_PRODUCER_ID, request.header.api_version)
    answer = await handle_init_producer_id(ctx.manager, request.body.transactional_id, ctx.caller)
    return build(
        cls,
        throttle_time=0,
        error_code=answer.error,
        producer_id=answer.producer_id,
        producer_epoch=answer.producer_epoch,
    )
