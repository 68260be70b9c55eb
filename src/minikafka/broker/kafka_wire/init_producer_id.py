"""InitProducerId for idempotent producers: a producer id the controller allocated to this broker, epoch 0. As in
Kafka, a request without a transactional id always gets a new id, whatever id and epoch it carries (KIP-360's
fields matter only to transactional producers, and transactions are not supported here)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.entities import build
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.errors import ErrorCode, KafkaError

INIT_PRODUCER_ID = 22


async def handle(ctx: WireContext, request: Request) -> Any:
    cls = response_class(INIT_PRODUCER_ID, request.header.api_version)
    if request.body.transactional_id is not None:
        # No transaction coordinator here: a transactional producer is told so, once and for good.
        return build(cls, throttle_time=0, error_code=ErrorCode.INVALID_REQUEST, producer_id=-1, producer_epoch=-1)
    try:
        producer_id = await ctx.manager.producer_ids.generate()
    except KafkaError as error:
        return build(cls, throttle_time=0, error_code=error.code, producer_id=-1, producer_epoch=-1)
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, producer_id=producer_id, producer_epoch=0)
