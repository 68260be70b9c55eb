"""InitProducerId for idempotent producers (Kafka's KafkaApis.handleInitProducerIdRequest without a transaction
coordinator): a producer id the controller allocated to this broker, epoch 0. As in Kafka, a request without a
transactional id always gets a new id, whatever id and epoch it carries (KIP-360's fields matter only to
transactional producers, and transactions are not supported here)."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.broker.replica_manager import ReplicaManager
from minikafka.common.errors import ErrorCode, KafkaError


@dataclass(slots=True)
class ProducerIdAnswer:
    error: ErrorCode
    message: str
    producer_id: int  # -1 on an error
    producer_epoch: int  # -1 on an error


async def handle_init_producer_id(manager: ReplicaManager, transactional_id: str | None) -> ProducerIdAnswer:
    if transactional_id is not None:
        # No transaction coordinator here: a transactional producer is told so, once and for good.
        return ProducerIdAnswer(ErrorCode.INVALID_REQUEST, "transactions are not supported", -1, -1)
    try:
        producer_id = await manager.producer_ids.generate()
    except KafkaError as error:
        return ProducerIdAnswer(error.code, error.message, -1, -1)
    return ProducerIdAnswer(ErrorCode.NONE, "", producer_id, 0)
