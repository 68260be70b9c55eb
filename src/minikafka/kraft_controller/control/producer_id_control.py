"""Kafka's ProducerIdControlManager: brokers take producer ids from the controller in blocks, each block committed
as a ProducerIdsRecord before it is handed out, so no id is ever given twice, across controller failovers too."""

from __future__ import annotations

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.requests import AllocateProducerIdsRequest, AllocateProducerIdsResponse
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import ProducerIds

PRODUCER_ID_BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
MAX_PRODUCER_ID = 2**63 - 1


def allocate_producer_ids(
    image: MetadataImage, request: AllocateProducerIdsRequest
) -> ControllerResult[AllocateProducerIdsResponse]:
    """The next block for a registered broker at its current epoch; STALE_BROKER_EPOCH (or
    BROKER_ID_NOT_REGISTERED) for anyone else, as Kafka's clusterControl.checkBrokerEpoch."""
    broker = image.broker(request.broker_id)
    if broker is None:
        raise KafkaError(ErrorCode.BROKER_ID_NOT_REGISTERED, f"broker {request.broker_id} is not registered")
    if broker.broker_epoch != request.broker_epoch:
        raise KafkaError(
            ErrorCode.STALE_BROKER_EPOCH,
            f"broker {request.broker_id} epoch {request.broker_epoch} is not its current {broker.broker_epoch}",
        )
    start = image.next_producer_id
    if start > MAX_PRODUCER_ID - PRODUCER_ID_BLOCK_SIZE:
        raise KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR, "producer ids are exhausted")
    record = ProducerIds(request.broker_id, request.broker_epoch, start + PRODUCER_ID_BLOCK_SIZE)
    return ControllerResult((record,), AllocateProducerIdsResponse(ErrorCode.NONE, start, PRODUCER_ID_BLOCK_SIZE))
