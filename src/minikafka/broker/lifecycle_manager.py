"""The broker's registration and heartbeats with the active controller (Kafka's BrokerLifecycleManager): the shell
around the pure `broker.lifecycle.Lifecycle`.

The pure lifecycle decides; this shell gives it the time and the metadata offset on each tick, sends the
registration or heartbeat it asks for (one at a time) and reports the answer back, and carries out its effects:
BecomeUnfenced/BecomeFenced set what `serving` reports, Exit stops the heartbeats and asks the process to end (a
broker that no longer heartbeats never stays up as a zombie). `caught_up` is set once the lifecycle is initially
caught up: clients are answered from the metadata from then on; `initially_unfenced` once the controller first
unfenced this broker: every listener processes requests from then on (Kafka's enableRequestProcessing).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable

import structlog

from minikafka.broker.config import BrokerConfig
from minikafka.broker.controller_client import ControllerClient
from minikafka.broker.lifecycle import (
    BecomeFenced,
    BecomeUnfenced,
    Exit,
    Lifecycle,
    LifecycleConfig,
    LifecycleEffect,
    PendingControlledShutdown,
    Running,
    SelfFenced,
    SendHeartbeat,
    SendRegistration,
    Transition,
)
from minikafka.common.clock import monotonic_ms, new_random
from minikafka.common.errors import ErrorCode
from minikafka.pb import common_pb2, controller_pb2

MAX_TICK_MS = 50  # the lifecycle's timers (next heartbeat, self-fencing) are checked at least this often
# Kafka's broker waits this long for the controller to approve its controlled shutdown: moving thousands of
# leaderships, and the other brokers replaying the moves, can take longer than a session. A controller silent for a
# session timeout ends the wait sooner (the lifecycle abandons: it has fenced us by then).
CONTROLLED_SHUTDOWN_TIMEOUT_S = 300.0


def lifecycle_config(config: BrokerConfig) -> LifecycleConfig:
    return LifecycleConfig(
        broker_id=config.node_id,
        heartbeat_interval_ms=config.heartbeat_interval_ms,
        session_timeout_ms=config.session_timeout_ms,
        self_fencing_enable=config.self_fencing_enable,
        self_fencing_timeout_ms=config.self_fencing_timeout_ms,
        registration_backoff_ms=min(100, config.heartbeat_interval_ms),
        initial_registration_timeout_ms=config.initial_registration_timeout_ms,
    )


class LifecycleManager:
    def __init__(
        self,
        config: BrokerConfig,
        metadata_offset: Callable[[], int],
        on_exit: Callable[[], None] = lambda: None,
        clock: Callable[[], int] = monotonic_ms,
        previous_broker_epoch: int = -1,
    ) -> None:
        """`previous_broker_epoch`: the epoch the last incarnation stopped cleanly with (-1: it did not)."""
        self.config = config
        self.previous_broker_epoch = previous_broker_epoch
        # The epoch this incarnation last held (kept once shutting down): what a clean stop records.
        self.last_broker_epoch = -1
        self.metadata_offset = metadata_offset
        self.on_exit = on_exit
        self.clock = clock
        self.incarnation_id = str(uuid.UUID(int=new_random().getrandbits(128), version=4))
        self.lifecycle = Lifecycle(lifecycle_config(config))
        self.registered = asyncio.Event()
        self.unfenced = asyncio.Event()
        self.shutdown_granted = asyncio.Event()  # set on Exit, however it came
        # Set once the controller first acknowledged our metadata caught up: clients may be answered from it then.
        self.caught_up = asyncio.Event()
        # Set once the controller first unfenced us: every listener processes requests from then on, never closing.
        self.initially_unfenced = asyncio.Event()
        self.controller = ControllerClient(config)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._in_flight: asyncio.Task[None] | None = None
        self._log = structlog.get_logger()

    @property
    def broker_epoch(self) -> int:
        return self.lifecycle.broker_epoch

    @property
    def serving(self) -> bool:
        """Whether this broker may act as a leader: registered and unfenced (and not self-fenced)."""
        return self.lifecycle.serving

    @property
    def fenced(self) -> bool:
        return not isinstance(self.lifecycle.state, Running | PendingControlledShutdown)

    @property
    def self_fenced(self) -> bool:
        return isinstance(self.lifecycle.state, SelfFenced)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="broker-lifecycle")
        self._task.add_done_callback(self._on_run_done)

    def _on_run_done(self, task: asyncio.Task[None]) -> None:
        """The heartbeats stopped: the process goes too, however they stopped (never a broker left up unheard)."""
        if task.cancelled():
            return
        if task.exception() is not None:
            self._log.error("broker_lifecycle_failed", broker_id=self.config.node_id, error=repr(task.exception()))
            self.on_exit()

    async def stop(self) -> None:
        for task in (self._task, self._in_flight):
            if task is not None:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        await self.controller.close()

    async def controlled_shutdown(self, timeout_s: float = CONTROLLED_SHUTDOWN_TIMEOUT_S) -> None:
        """Ask the controller to move leadership away, and wait until it lets us go, while it answers."""
        if self.lifecycle.exited:
            return
        self._step(self.lifecycle.on_shutdown_requested(self.clock()))
        self._wake.set()
        try:
            await asyncio.wait_for(self.shutdown_granted.wait(), timeout_s)
        except TimeoutError:
            self._log.warning("controlled_shutdown_timed_out", broker_id=self.config.node_id, timeout_s=timeout_s)

    async def report_offline_log_dirs(self, log_dirs: tuple[str, ...], timeout_s: float) -> None:
        """No log dir is left: tell the controller (it fences us and moves our leaderships), and wait until it
        answered or `timeout_s` passed (unheard, the session timeout fences us all the same)."""
        if self.lifecycle.exited:
            return
        self._step(self.lifecycle.on_log_dirs_offline(log_dirs, self.clock()))
        self._wake.set()
        try:
            await asyncio.wait_for(self.shutdown_granted.wait(), timeout_s)
        except TimeoutError:
            self._log.warning("offline_log_dirs_unacknowledged", broker_id=self.config.node_id, timeout_s=timeout_s)

    # ---- the shell ----

    async def _run(self) -> None:
        self._step(self.lifecycle.start(self.incarnation_id, self.clock()))
        while not self.lifecycle.exited:
            self._step(self.lifecycle.tick(self.clock(), self.metadata_offset()))
            if self.lifecycle.exited:
                return
            now = self.clock()
            wait_ms = self.lifecycle.next_tick_ms(now, MAX_TICK_MS) - now
            # A timer sets the same event an answer sets: unlike wait_for on Python 3.11, this never swallows the
            # cancellation that stops the loop.
            self._wake.clear()
            timer = asyncio.get_running_loop().call_later(wait_ms / 1000, self._wake.set)
            try:
                await self._wake.wait()
            finally:
                timer.cancel()

    def _step(self, transition: Transition) -> None:
        """Adopt the lifecycle's new value and carry out its effects."""
        self.lifecycle, effects = transition
        if self.lifecycle.broker_epoch >= 0:
            self.last_broker_epoch = self.lifecycle.broker_epoch
            self.registered.set()
        if self.lifecycle.initially_caught_up:
            self.caught_up.set()
        if self.lifecycle.initially_unfenced:
            self.initially_unfenced.set()
        for effect in effects:
            self._apply(effect)

    def _apply(self, effect: LifecycleEffect) -> None:
        match effect:
            case SendRegistration() | SendHeartbeat():
                self._in_flight = asyncio.create_task(self._send(effect), name="broker-lifecycle-request")
            case BecomeUnfenced():
                self.unfenced.set()
            case BecomeFenced():
                self.unfenced.clear()
            case Exit():
                self.shutdown_granted.set()
                self.on_exit()

    @property
    def registration_timed_out(self) -> bool:
        """The first registration was not accepted within initial.broker.registration.timeout.ms: the process ends."""
        return self.lifecycle.registration_timed_out

    async def _send(self, effect: SendRegistration | SendHeartbeat) -> None:
        try:
            await self._exchange(effect)
        except Exception as error:  # an answer we could not use counts as none: the lifecycle retries
            self._log.warning("broker_lifecycle_request_failed", broker_id=self.config.node_id, error=repr(error))
            self._step(self.lifecycle.on_controller_unreachable(self.clock()))
        self._wake.set()

    async def _exchange(self, effect: SendRegistration | SendHeartbeat) -> None:
        """Send one request and report its answer (or its absence) to the lifecycle."""
        if isinstance(effect, SendRegistration):
            response = await self.controller.call("BrokerRegistration", self._registration_request(effect))
            now = self.clock()
            if response is None:
                self._step(self.lifecycle.on_controller_unreachable(now))
            else:
                error = ErrorCode.of(response.error_code)
                self._step(self.lifecycle.on_registration_response(error, response.broker_epoch, now))
        else:
            request = controller_pb2.BrokerHeartbeatRequest(
                broker_id=effect.broker_id,
                broker_epoch=effect.broker_epoch,
                current_metadata_offset=effect.current_metadata_offset,
                want_fence=effect.want_fence,
                want_shutdown=effect.want_shutdown,
                offline_log_dirs=list(effect.offline_log_dirs),
            )
            # Kafka's broker waits up to half a session for a heartbeat's answer: a controller busy with a write of
            # thousands of records answers late, and an answer given up on is a contact missed.
            timeout_s = self.config.session_timeout_ms / 2000
            response = await self.controller.call("BrokerHeartbeat", request, attempt_timeout_s=timeout_s)
            now = self.clock()
            if response is None:
                self._step(self.lifecycle.on_controller_unreachable(now))
            else:
                self._step(
                    self.lifecycle.on_heartbeat_response(
                        ErrorCode.of(response.error_code),
                        response.is_caught_up,
                        response.is_fenced,
                        response.should_shutdown,
                        now,
                    )
                )

    def _registration_request(self, effect: SendRegistration) -> controller_pb2.BrokerRegistrationRequest:
        listeners = [
            common_pb2.Endpoint(name=listener.name, host=listener.host, port=listener.port)
            for listener in self.config.advertised
        ]
        return controller_pb2.BrokerRegistrationRequest(
            broker_id=effect.broker_id,
            cluster_id=self.config.cluster_id,
            incarnation_id=effect.incarnation_id,
            listeners=listeners,
            rack=self.config.broker_rack,
            previous_broker_epoch=self.previous_broker_epoch,
        )
