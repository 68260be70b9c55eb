"""A controller's registration (KIP-919), as Kafka's QuorumController.registerController: each controller process
sends the active controller its Kafka listeners under a new incarnation id, and the active controller writes a
RegisterController record, unless the log's latest for that controller is already this one."""

from __future__ import annotations

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import RegisterController


def register_controller(image: MetadataImage, request: RegisterController) -> ControllerResult[None]:
    if request.controller_id < 0 or not request.incarnation_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "controller id must be >= 0 and incarnation id non-empty")
    if image.controllers.get(request.controller_id) == request:
        return ControllerResult((), None)  # a retry after its record was written: nothing new
    return ControllerResult((request,), None)
