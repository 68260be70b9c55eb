"""The broker's registration and heartbeats with the active controller (Kafka's BrokerLifecycleManager).

A new incarnation id per start; registration is retried (DUPLICATE_BROKER_REGISTRATION while the previous
incarnation's session lives); heartbeats every `broker.heartbeat.interval.ms` carry the metadata offset; the broker
starts fenced and is unfenced when the controller says so; without a successful heartbeat for
`broker.session.timeout.ms` it fences itself; SIGTERM asks for a controlled shutdown and waits for the controller's
`should_shutdown`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import structlog

from broker.config import BrokerConfig
from broker.controller_client import ControllerClient
from common.clock import monotonic_ms
from common.errors import ErrorCode
from minikafka_pb import common_pb2, controller_pb2


class LifecycleManager:
    def __init__(self, config: BrokerConfig, metadata_offset: Callable[[], int]) -> None:
        self.config = config
        self.metadata_offset = metadata_offset
        self.incarnation_id = str(uuid.uuid4())
        self.broker_epoch = -1
        self.fenced = True  # as the controller last said
        self.self_fenced = False
        self.should_shutdown = False
        self.want_shutdown = False
        self.last_successful_heartbeat_ms = monotonic_ms()
        self.registered = asyncio.Event()
        self.unfenced = asyncio.Event()
        self.shutdown_granted = asyncio.Event()
        self.controller = ControllerClient(config)
        self._task: asyncio.Task[None] | None = None
        self._log = structlog.get_logger()

    @property
    def serving(self) -> bool:
        """Whether this broker may act as a leader: registered, unfenced, and not self-fenced."""
        return self.broker_epoch >= 0 and not self.fenced and not self.self_fenced

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="broker-lifecycle")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.controller.close()

    async def controlled_shutdown(self, timeout_s: float) -> None:
        """Ask the controller to move leadership away, and wait until it lets us go."""
        if self.broker_epoch < 0:
            return
        self.want_shutdown = True
        self._log.info("controlled_shutdown_started", broker_id=self.config.node_id, broker_epoch=self.broker_epoch)
        try:
            await asyncio.wait_for(self.shutdown_granted.wait(), timeout_s)
        except TimeoutError:
            self._log.warning("controlled_shutdown_timed_out", broker_id=self.config.node_id, timeout_s=timeout_s)

    async def _run(self) -> None:
        interval = self.config.heartbeat_interval_ms / 1000
        while self.broker_epoch < 0:
            await self._register()
            if self.broker_epoch < 0:
                await asyncio.sleep(min(interval, 0.5))
        while True:
            await self._heartbeat()
            if self.should_shutdown:
                return
            await asyncio.sleep(interval if not self.want_shutdown else min(interval, 0.2))

    async def _register(self) -> None:
        listeners = [
            common_pb2.Endpoint(name=listener.name, host=listener.host, port=listener.port)
            for listener in self.config.advertised
        ]
        request = controller_pb2.BrokerRegistrationRequest(
            broker_id=self.config.node_id,
            cluster_id=self.config.cluster_id,
            incarnation_id=self.incarnation_id,
            listeners=listeners,
        )
        response = await self.controller.call("BrokerRegistration", request)
        if response is None:
            return
        if response.error_code != ErrorCode.NONE:
            self._log.info(
                "broker_registration_retry",
                broker_id=self.config.node_id,
                error=ErrorCode.of(response.error_code).name,
                message=response.error_message,
            )
            return
        self.broker_epoch = response.broker_epoch
        self.last_successful_heartbeat_ms = monotonic_ms()
        self.registered.set()
        self._log.info(
            "broker_registered_locally",
            broker_id=self.config.node_id,
            broker_epoch=self.broker_epoch,
            incarnation_id=self.incarnation_id,
        )

    async def _heartbeat(self) -> None:
        request = controller_pb2.BrokerHeartbeatRequest(
            broker_id=self.config.node_id,
            broker_epoch=self.broker_epoch,
            current_metadata_offset=self.metadata_offset(),
            want_fence=False,
            want_shutdown=self.want_shutdown,
        )
        response = await self.controller.call("BrokerHeartbeat", request)
        now = monotonic_ms()
        if response is None or response.error_code != ErrorCode.NONE:
            if response is not None and response.error_code == ErrorCode.STALE_BROKER_EPOCH:
                self._log.warning("broker_epoch_stale", broker_id=self.config.node_id, broker_epoch=self.broker_epoch)
            if not self.self_fenced and now - self.last_successful_heartbeat_ms >= self.config.session_timeout_ms:
                self.self_fenced = True
                self._log.warning(
                    "self_fenced",
                    broker_id=self.config.node_id,
                    broker_epoch=self.broker_epoch,
                    since_last_heartbeat_ms=now - self.last_successful_heartbeat_ms,
                )
            return
        self.last_successful_heartbeat_ms = now
        if self.self_fenced:
            self.self_fenced = False
            self._log.info("self_fence_lifted", broker_id=self.config.node_id)
        was_fenced = self.fenced
        self.fenced = response.is_fenced
        if was_fenced and not self.fenced:
            self.unfenced.set()
            self._log.info("broker_unfenced_locally", broker_id=self.config.node_id, broker_epoch=self.broker_epoch)
        elif not was_fenced and self.fenced:
            self.unfenced.clear()
            self._log.warning("broker_fenced_locally", broker_id=self.config.node_id, broker_epoch=self.broker_epoch)
        if response.should_shutdown:
            self.should_shutdown = True
            self.shutdown_granted.set()
