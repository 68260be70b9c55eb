"""The broker's lifecycle with the active controller, pure (Kafka's BrokerLifecycleManager states).

Starting -> Registering -> Recovery (registered, fenced, catching up metadata) -> Running (unfenced)
-> PendingControlledShutdown -> ShuttingDown. As in KRaft, losing the controller quorum does not stop a broker
serving: only metadata changes wait for the quorum. Self-fencing (SelfFenced: a Running broker with no successful
heartbeat for `broker.self.fencing.timeout.ms` stops acting as a leader) is an option, off by default; its timeout
is longer than the controller's session timeout, so the controller has fenced the broker and moved its leaderships
by then. A heartbeat answered STALE_BROKER_EPOCH means the controller no longer knows this registration: the broker
registers again. `should_shutdown` is acted on only after this broker asked to shut down. Each event takes `now_ms`
and returns the new value plus effects; the shell sends the requests, reports their answers or failures, and applies
BecomeFenced/BecomeUnfenced/Exit (Exit ends the process: a broker that stops heartbeating never stays up); once
`initially_unfenced`, it enables request processing on every listener.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import structlog

from minikafka.common.errors import ErrorCode


@dataclass(frozen=True)
class LifecycleConfig:
    broker_id: int
    heartbeat_interval_ms: int = 2000  # broker.heartbeat.interval.ms
    session_timeout_ms: int = 9000  # broker.session.timeout.ms (the controller's)
    self_fencing_enable: bool = False  # broker.self.fencing.enable
    self_fencing_timeout_ms: int = 18000  # broker.self.fencing.timeout.ms
    registration_backoff_ms: int = 100  # first retry; doubles per failure up to the heartbeat interval
    initial_registration_timeout_ms: int = 60000  # initial.broker.registration.timeout.ms


# Kafka's broker asks again this soon after the first "not yet" to its controlled shutdown: the controller has
# usually moved the leaderships by then, and the shutdown need not wait a whole heartbeat interval.
CONTROLLED_SHUTDOWN_FIRST_RETRY_MS = 50


# ---- states ----


@dataclass(frozen=True)
class Starting:
    pass


@dataclass(frozen=True)
class Registering:
    attempts: int = 0


@dataclass(frozen=True)
class Recovery:
    broker_epoch: int
    caught_up: bool = False  # the controller's last is_caught_up: our metadata reached our registration


@dataclass(frozen=True)
class Running:
    broker_epoch: int


@dataclass(frozen=True)
class SelfFenced:
    broker_epoch: int


@dataclass(frozen=True)
class PendingControlledShutdown:
    broker_epoch: int
    answered: bool = False  # the controller answered "not yet" once: later heartbeats keep the usual interval


@dataclass(frozen=True)
class ShuttingDown:
    pass


LifecycleState = Starting | Registering | Recovery | Running | SelfFenced | PendingControlledShutdown | ShuttingDown
_REGISTERED = (Recovery, Running, SelfFenced, PendingControlledShutdown)


# ---- effects ----


@dataclass(frozen=True)
class SendRegistration:
    broker_id: int
    incarnation_id: str


@dataclass(frozen=True)
class SendHeartbeat:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shutdown: bool
    offline_log_dirs: tuple[str, ...] = ()


@dataclass(frozen=True)
class BecomeFenced:
    """Stop acting as a leader: answer NOT_LEADER_OR_FOLLOWER, fail waiting produces."""


@dataclass(frozen=True)
class BecomeUnfenced:
    """Serve the partitions the metadata gives us."""


@dataclass(frozen=True)
class Exit:
    """Stop heartbeating and end the process."""


LifecycleEffect = SendRegistration | SendHeartbeat | BecomeFenced | BecomeUnfenced | Exit
Transition = tuple["Lifecycle", tuple[LifecycleEffect, ...]]


@dataclass(frozen=True)
class Lifecycle:
    config: LifecycleConfig
    state: LifecycleState = Starting()
    incarnation_id: str = ""
    last_contact_ms: int = 0  # the last successful registration or heartbeat
    next_send_ms: int = 0
    in_flight_since_ms: int | None = None  # one request to the controller at a time
    offline_log_dirs: tuple[str, ...] = ()  # failed log dirs, told to the controller in every heartbeat
    # The controller acknowledged, once in this process, that our metadata reached our registration (Kafka's
    # initialCatchUpFuture): clients may be answered from it from then on, whatever happens later.
    initially_caught_up: bool = False
    # The controller unfenced us once in this process (Kafka's initialUnfenceFuture, after which BrokerServer enables
    # request processing): the listeners serve from then on; a later fencing does not close them.
    initially_unfenced: bool = False
    # Until the first registration is accepted: when the process gives up (Kafka's RegistrationTimeoutEvent).
    registration_deadline_ms: int | None = None
    registration_timed_out: bool = False

    @property
    def broker_epoch(self) -> int:
        return self.state.broker_epoch if isinstance(self.state, _REGISTERED) else -1

    @property
    def serving(self) -> bool:
        """Whether this broker may lead partitions and answer clients."""
        return isinstance(self.state, Running | PendingControlledShutdown)

    @property
    def exited(self) -> bool:
        return isinstance(self.state, ShuttingDown)

    def next_tick_ms(self, now_ms: int, longest_ms: int) -> int:
        """When `tick` next has work: the next send is due, but not while a request is in flight (its answer
        wakes the shell); the session timers are looked at every `longest_ms` at least."""
        if self.in_flight_since_ms is not None:
            return now_ms + longest_ms
        return min(now_ms + longest_ms, max(now_ms + 1, self.next_send_ms))

    # ---- events ----

    def start(self, incarnation_id: str, now_ms: int) -> Transition:
        """A new process: a new incarnation id (the caller makes it), registered before anything else."""
        started = replace(
            self,
            state=Registering(),
            incarnation_id=incarnation_id,
            last_contact_ms=now_ms,
            registration_deadline_ms=now_ms + self.config.initial_registration_timeout_ms,
        )
        return started._send_registration(now_ms)

    def tick(self, now_ms: int, metadata_offset: int) -> Transition:
        if self.registration_deadline_ms is not None and now_ms >= self.registration_deadline_ms:
            return self._registration_timed_out()
        state, effects = self._check_session(now_ms)
        if state.in_flight_since_ms is not None or now_ms < state.next_send_ms:
            return state, effects
        if isinstance(state.state, Registering):
            state, more = state._send_registration(now_ms)
            return state, effects + more
        if isinstance(state.state, _REGISTERED):
            state, more = state._send_heartbeat(now_ms, metadata_offset)
            return state, effects + more
        return state, effects

    def on_registration_response(self, error: ErrorCode, broker_epoch: int, now_ms: int) -> Transition:
        if not isinstance(self.state, Registering):
            return self, ()
        if error != ErrorCode.NONE:
            # DUPLICATE_BROKER_REGISTRATION: the previous incarnation's session still lives; wait it out.
            attempts = self.state.attempts + 1
            backoff = min(self.config.registration_backoff_ms * 2 ** (attempts - 1), self.config.heartbeat_interval_ms)
            structlog.get_logger().info(
                "broker_registration_rejected",
                broker_id=self.config.broker_id,
                incarnation_id=self.incarnation_id,
                expected_error=ErrorCode.NONE.name,
                actual_error=error.name,
                attempts=attempts,
                retry_in_ms=backoff,
            )
            return replace(
                self, state=Registering(attempts), in_flight_since_ms=None, next_send_ms=now_ms + backoff
            ), ()
        structlog.get_logger().info(
            "broker_registered_locally",
            broker_id=self.config.broker_id,
            broker_epoch=broker_epoch,
            incarnation_id=self.incarnation_id,
        )
        # Heartbeat at once: the controller unfences us only from a heartbeat.
        return replace(
            self,
            state=Recovery(broker_epoch),
            last_contact_ms=now_ms,
            in_flight_since_ms=None,
            next_send_ms=now_ms,
            registration_deadline_ms=None,
        ), ()

    def on_heartbeat_response(
        self, error: ErrorCode, is_caught_up: bool, is_fenced: bool, should_shutdown: bool, now_ms: int
    ) -> Transition:
        if not isinstance(self.state, _REGISTERED):
            return self, ()
        after = replace(self, in_flight_since_ms=None, next_send_ms=now_ms + self.config.heartbeat_interval_ms)
        if error == ErrorCode.STALE_BROKER_EPOCH:
            return after._register_again(now_ms)
        if error == ErrorCode.REQUEST_TIMED_OUT:
            # The controller heard us but its queue was busy: as Kafka's, it renewed our session with it, so the
            # silence that self-fences or abandons a controlled shutdown starts again from here.
            after = replace(after, last_contact_ms=now_ms)
        if error != ErrorCode.NONE:
            structlog.get_logger().info(
                "broker_heartbeat_rejected",
                broker_id=self.config.broker_id,
                broker_epoch=self.broker_epoch,
                expected_error=ErrorCode.NONE.name,
                actual_error=error.name,
            )
            return after._check_session(now_ms)
        after = replace(after, last_contact_ms=now_ms)
        if should_shutdown and not isinstance(self.state, PendingControlledShutdown):
            # Someone else asked to shut this broker down (or an old request's answer): it is not ours to act on.
            structlog.get_logger().warning(
                "should_shutdown_ignored", broker_id=self.config.broker_id, broker_epoch=self.broker_epoch
            )
        after = after._note_initial_catch_up(is_caught_up or not is_fenced)
        return after._after_heartbeat(is_caught_up, is_fenced, should_shutdown, now_ms)

    def on_controller_unreachable(self, now_ms: int) -> Transition:
        """The outstanding request failed or timed out without an answer."""
        if self.in_flight_since_ms is None:
            return self._check_session(now_ms)
        retry_ms = min(self.config.registration_backoff_ms, self.config.heartbeat_interval_ms)
        return replace(self, in_flight_since_ms=None, next_send_ms=now_ms + retry_ms)._check_session(now_ms)

    def on_log_dirs_offline(self, log_dirs: tuple[str, ...], now_ms: int) -> Transition:
        """Every log dir failed: stop leading at once, tell the controller in a heartbeat now (it fences us and
        moves our leaderships), and exit once it answered fenced. Unregistered, there is no one to tell."""
        if not isinstance(self.state, _REGISTERED):
            return replace(self, state=ShuttingDown(), offline_log_dirs=log_dirs), (BecomeFenced(), Exit())
        return replace(self, offline_log_dirs=log_dirs, next_send_ms=now_ms), (BecomeFenced(),)

    def on_shutdown_requested(self, now_ms: int) -> Transition:
        """SIGTERM: a leader asks the controller to move its leaderships first; anything else just exits."""
        match self.state:
            case Running(broker_epoch=epoch):
                structlog.get_logger().info(
                    "controlled_shutdown_started", broker_id=self.config.broker_id, broker_epoch=epoch
                )
                return replace(self, state=PendingControlledShutdown(epoch), next_send_ms=now_ms), ()
            case PendingControlledShutdown() | ShuttingDown():
                return self, ()
        return replace(self, state=ShuttingDown()), (BecomeFenced(), Exit())

    # ---- helpers ----

    def _note_initial_catch_up(self, caught_up: bool) -> Lifecycle:
        """The first heartbeat answer saying we are caught up (or unfenced, which the controller grants only then)."""
        if not caught_up or self.initially_caught_up:
            return self
        structlog.get_logger().info(
            "broker_metadata_caught_up", broker_id=self.config.broker_id, broker_epoch=self.broker_epoch
        )
        return replace(self, initially_caught_up=True)

    def _after_heartbeat(self, is_caught_up: bool, is_fenced: bool, should_shutdown: bool, now_ms: int) -> Transition:
        """A successful heartbeat's answer (contact already recorded)."""
        epoch = self.broker_epoch
        log = structlog.get_logger()
        if self.offline_log_dirs and is_fenced:
            log.info("broker_fenced_for_offline_log_dirs", broker_id=self.config.broker_id, broker_epoch=epoch)
            return replace(self, state=ShuttingDown()), (BecomeFenced(), Exit())
        match self.state:
            case Recovery() | SelfFenced() if not is_fenced:
                log.info("broker_unfenced_locally", broker_id=self.config.broker_id, broker_epoch=epoch)
                return replace(self, state=Running(epoch), initially_unfenced=True), (BecomeUnfenced(),)
            case Recovery() | SelfFenced():
                after = self
                if is_caught_up and not (isinstance(self.state, Recovery) and self.state.caught_up):
                    after = replace(self, next_send_ms=now_ms)  # ask to be unfenced without waiting an interval
                return replace(after, state=Recovery(epoch, is_caught_up)), ()
            case Running() if is_fenced:
                # The controller fenced us (a missed session): back to catching up, serving nothing.
                log.info("broker_fenced_by_controller", broker_id=self.config.broker_id, broker_epoch=epoch)
                return replace(self, state=Recovery(epoch, is_caught_up)), (BecomeFenced(),)
            case PendingControlledShutdown() if should_shutdown:
                log.info("controlled_shutdown_granted", broker_id=self.config.broker_id)
                return replace(self, state=ShuttingDown()), (BecomeFenced(), Exit())
            case PendingControlledShutdown(answered=False):
                return replace(
                    self,
                    state=PendingControlledShutdown(epoch, answered=True),
                    next_send_ms=now_ms + CONTROLLED_SHUTDOWN_FIRST_RETRY_MS,
                ), ()
        return self, ()

    def _register_again(self, now_ms: int) -> Transition:
        """STALE_BROKER_EPOCH: the controller does not know this registration (lost in a failover, or replaced).
        Heartbeating on with it would be refused forever, so register again at once, as Kafka's broker does; the
        new registration starts fenced and is unfenced once caught up. A broker already shutting down just exits."""
        structlog.get_logger().warning(
            "broker_epoch_stale",
            broker_id=self.config.broker_id,
            broker_epoch=self.broker_epoch,
            shutting_down=isinstance(self.state, PendingControlledShutdown),
        )
        if isinstance(self.state, PendingControlledShutdown):
            return replace(self, state=ShuttingDown()), (BecomeFenced(), Exit())
        effects: tuple[LifecycleEffect, ...] = (BecomeFenced(),) if self.serving else ()
        return replace(self, state=Registering(), next_send_ms=now_ms), effects

    def _check_session(self, now_ms: int) -> Transition:
        silent_ms = now_ms - self.last_contact_ms
        log = structlog.get_logger()
        match self.state:
            case Running(broker_epoch=epoch) if (
                self.config.self_fencing_enable and silent_ms >= self.config.self_fencing_timeout_ms
            ):
                log.warning(
                    "self_fenced",
                    broker_id=self.config.broker_id,
                    broker_epoch=epoch,
                    expected_max_silence_ms=self.config.self_fencing_timeout_ms,
                    actual_silence_ms=silent_ms,
                )
                return replace(self, state=SelfFenced(epoch)), (BecomeFenced(),)
            case PendingControlledShutdown(broker_epoch=epoch) if silent_ms >= self.config.session_timeout_ms:
                # The controller has fenced us by now, which moves our leaderships as well: nothing to wait for.
                log.warning(
                    "controlled_shutdown_abandoned",
                    broker_id=self.config.broker_id,
                    broker_epoch=epoch,
                    expected_max_silence_ms=self.config.session_timeout_ms,
                    actual_silence_ms=silent_ms,
                )
                return replace(self, state=ShuttingDown()), (BecomeFenced(), Exit())
        return self, ()

    def _registration_timed_out(self) -> Transition:
        """No registration accepted within initial.broker.registration.timeout.ms of the start: the broker gives
        up and exits, as Kafka's does (a controller quorum unreachable, or another incarnation's session living on)."""
        structlog.get_logger().error(
            "broker_registration_timed_out",
            broker_id=self.config.broker_id,
            incarnation_id=self.incarnation_id,
            timeout_ms=self.config.initial_registration_timeout_ms,
            attempts=self.state.attempts if isinstance(self.state, Registering) else 0,
        )
        ended = replace(self, state=ShuttingDown(), registration_deadline_ms=None, registration_timed_out=True)
        return ended, (Exit(),)

    def _send_registration(self, now_ms: int) -> Transition:
        sent = replace(self, in_flight_since_ms=now_ms)
        return sent, (SendRegistration(self.config.broker_id, self.incarnation_id),)

    def _send_heartbeat(self, now_ms: int, metadata_offset: int) -> Transition:
        want_fence = isinstance(self.state, Recovery) and not self.state.caught_up
        want_shutdown = isinstance(self.state, PendingControlledShutdown)
        heartbeat = SendHeartbeat(
            self.config.broker_id, self.broker_epoch, metadata_offset, want_fence, want_shutdown, self.offline_log_dirs
        )
        return replace(self, in_flight_since_ms=now_ms), (heartbeat,)
