"""Kafka's ControllerRegistrationManager (KIP-919): a controller serving Kafka's protocol registers its listeners
with the active controller under this process's incarnation id, and asks again until the committed metadata holds
that registration. The active controller writes it as a RegisterController record, which every controller and
broker replays; DescribeCluster on a controller lists the registered controllers from it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import structlog

from minikafka.common.clock import new_random
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.records import Endpoint, RegisterController, endpoints_to_proto
from minikafka.pb import controller_pb2

RETRY_S = 0.5  # between attempts, and between looks at the committed metadata after one was accepted
ATTEMPT_TIMEOUT_S = 5.0

# The active controller's answer to a request, or None when none answered in time (ControllerClient.call_within).
ActiveControllerCall = Callable[[str, Any, float], Awaitable[Any | None]]


class ControllerRegistrationManager:
    def __init__(
        self,
        controller_id: int,
        endpoints: tuple[Endpoint, ...],
        call: ActiveControllerCall,
        committed: Callable[[], Mapping[int, RegisterController]],
    ) -> None:
        incarnation_id = str(uuid.UUID(int=new_random().getrandbits(128), version=4))
        self.registration = RegisterController(controller_id, incarnation_id, endpoints)
        self._call = call
        self._committed = committed
        self._log = structlog.get_logger()

    def registered(self) -> bool:
        return self._committed().get(self.registration.controller_id) == self.registration

    async def run(self) -> None:
        """Until this incarnation's registration is committed and replayed here."""
        while not self.registered():
            await self._send()
            await asyncio.sleep(RETRY_S)

    async def _send(self) -> None:
        request = controller_pb2.ControllerRegistrationRequest(
            controller_id=self.registration.controller_id,
            incarnation_id=self.registration.incarnation_id,
            listeners=endpoints_to_proto(self.registration.endpoints),
        )
        answer = await self._call("ControllerRegistration", request, ATTEMPT_TIMEOUT_S)
        if answer is None:
            return  # no active controller answered: an election, or none reachable yet
        if answer.error_code != ErrorCode.NONE:
            self._log.warning(
                "controller_registration_failed",
                controller_id=self.registration.controller_id,
                error=ErrorCode.of(answer.error_code).name,
                error_message=answer.error_message,
            )
