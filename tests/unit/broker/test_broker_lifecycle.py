"""The pure broker lifecycle: registration, heartbeats, unfencing, self-fencing, controlled shutdown."""

from __future__ import annotations

from dataclasses import replace

from structlog.testing import capture_logs

from minikafka.broker.lifecycle import (
    BecomeFenced,
    BecomeUnfenced,
    Exit,
    Lifecycle,
    LifecycleConfig,
    PendingControlledShutdown,
    Recovery,
    Registering,
    Running,
    SelfFenced,
    SendHeartbeat,
    SendRegistration,
    ShuttingDown,
)
from minikafka.common.errors import ErrorCode

CONFIG = LifecycleConfig(broker_id=3, heartbeat_interval_ms=100, session_timeout_ms=450, registration_backoff_ms=10)
SELF_FENCING = replace(CONFIG, self_fencing_enable=True, self_fencing_timeout_ms=900)


def registered(now: int = 0, config: LifecycleConfig = CONFIG) -> Lifecycle:
    life, effects = Lifecycle(config).start("inc-1", now)
    assert effects == (SendRegistration(3, "inc-1"),)
    life, _ = life.on_registration_response(ErrorCode.NONE, 42, now)
    return life


def running(now: int = 0, config: LifecycleConfig = CONFIG) -> Lifecycle:
    life = registered(now, config)
    life, _ = life.tick(now, metadata_offset=50)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, False, now)
    assert effects == (BecomeUnfenced(),)
    return life


def test_registers_with_the_callers_incarnation_and_starts_fenced() -> None:
    life = registered()
    assert life.state == Recovery(42) and life.broker_epoch == 42 and not life.serving
    # Heartbeat at once, asking to stay fenced until the controller says our metadata has caught up.
    life, effects = life.tick(0, metadata_offset=7)
    assert effects == (SendHeartbeat(3, 42, 7, want_fence=True, want_shutdown=False),)
    life, effects = life.tick(1, metadata_offset=7)
    assert effects == ()  # one request at a time


def test_caught_up_then_unfenced() -> None:
    life = registered()
    life, _ = life.tick(0, 10)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, True, False, 5)
    assert effects == () and life.state == Recovery(42, caught_up=True)
    life, effects = life.tick(5, 60)  # sent at once, no longer asking to be fenced
    assert effects == (SendHeartbeat(3, 42, 60, want_fence=False, want_shutdown=False),)
    with capture_logs() as events:
        life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, False, 8)
    assert effects == (BecomeUnfenced(),) and life.state == Running(42) and life.serving
    assert events[0]["event"] == "broker_unfenced_locally" and events[0]["broker_epoch"] == 42


def test_heartbeats_every_interval() -> None:
    life = running(0)
    assert life.tick(99, 1)[1] == ()
    life, effects = life.tick(100, 77)
    assert effects == (SendHeartbeat(3, 42, 77, want_fence=False, want_shutdown=False),)


def test_the_next_tick_is_the_next_send_and_waits_for_an_answer_in_flight() -> None:
    life = running(0)
    assert life.next_tick_ms(30, longest_ms=50) == 80  # the session timers are looked at every 50 ms
    assert life.next_tick_ms(90, longest_ms=50) == 100  # the next heartbeat is due at 100
    assert life.next_tick_ms(120, longest_ms=50) == 121  # overdue: at once, the next millisecond
    life, _ = life.tick(100, 1)
    # A heartbeat is in flight: nothing to send until its answer, which wakes the shell (no 1 ms polling).
    assert life.next_tick_ms(130, longest_ms=50) == 180


def test_duplicate_registration_retries_after_a_growing_backoff() -> None:
    life, _ = Lifecycle(CONFIG).start("inc-2", 0)
    with capture_logs() as events:
        life, effects = life.on_registration_response(ErrorCode.DUPLICATE_BROKER_REGISTRATION, -1, 0)
    assert effects == () and life.state == Registering(1)
    assert events[0]["actual_error"] == "DUPLICATE_BROKER_REGISTRATION" and events[0]["retry_in_ms"] == 10
    assert life.tick(9, 0)[1] == ()
    life, effects = life.tick(10, 0)
    assert effects == (SendRegistration(3, "inc-2"),)
    life, _ = life.on_registration_response(ErrorCode.DUPLICATE_BROKER_REGISTRATION, -1, 10)
    assert life.next_send_ms == 30  # 20 ms: doubled


def test_a_broker_not_registered_within_the_initial_registration_timeout_exits() -> None:
    config = replace(CONFIG, initial_registration_timeout_ms=1000)
    life, _ = Lifecycle(config).start("inc-3", 0)
    for now in range(0, 1000, 10):  # DUPLICATE_BROKER_REGISTRATION answered to every attempt
        life, _ = life.tick(now, 0)
        if life.in_flight_since_ms is not None:
            life, _ = life.on_registration_response(ErrorCode.DUPLICATE_BROKER_REGISTRATION, -1, now)
    assert isinstance(life.state, Registering) and not life.registration_timed_out
    with capture_logs() as events:
        life, effects = life.tick(1000, 0)
    assert effects == (Exit(),) and life.state == ShuttingDown() and life.registration_timed_out
    assert events[0]["event"] == "broker_registration_timed_out" and events[0]["timeout_ms"] == 1000


def test_the_registration_timeout_ends_with_the_first_registration() -> None:
    config = replace(CONFIG, initial_registration_timeout_ms=1000)
    life = registered(0, config)
    life, effects = life.on_heartbeat_response(ErrorCode.STALE_BROKER_EPOCH, False, True, False, 5)
    assert isinstance(life.state, Registering)  # registering again later has no deadline, as Kafka's
    life, effects = life.tick(5000, 0)
    assert Exit() not in effects and not life.registration_timed_out


def unreachable_until(life: Lifecycle, start: int, end: int) -> tuple[Lifecycle, int, tuple]:  # type: ignore[type-arg]
    """Ticks every 10 ms from `start` with every request failing, until BecomeFenced or `end`."""
    effects: tuple = ()  # type: ignore[type-arg]
    for now in range(start, end, 10):
        life, effects = life.tick(now, 1)
        if life.in_flight_since_ms is not None:
            life, more = life.on_controller_unreachable(now)
            effects += more
        if BecomeFenced() in effects:
            return life, now, effects
    return life, end, effects


def test_by_default_a_broker_that_cannot_reach_the_controllers_keeps_serving() -> None:
    # KRaft brokers never fence themselves: losing the quorum stops metadata changes, not Produce and Fetch.
    life = running(0)
    with capture_logs() as events:
        life, now, effects = unreachable_until(life, 100, 60_000)
    assert BecomeFenced() not in effects and life.state == Running(42) and life.serving
    assert now == 60_000 and not [e for e in events if e["event"] == "self_fenced"]


def test_self_fences_when_enabled_and_no_heartbeat_succeeds_for_the_self_fencing_timeout() -> None:
    life = running(0, SELF_FENCING)
    life, _ = life.tick(100, 1)
    life, effects = life.on_controller_unreachable(120)
    assert effects == () and life.serving
    with capture_logs() as events:
        life, now, effects = unreachable_until(life, 130, 2000)
    assert BecomeFenced() in effects and life.state == SelfFenced(42) and not life.serving
    assert now == 900  # its own timeout, past the controller's session timeout (450)
    assert events[-1]["event"] == "self_fenced" and events[-1]["actual_silence_ms"] == 900
    assert events[-1]["expected_max_silence_ms"] == 900
    # Contact again: the controller has fenced us meanwhile; we catch up and are unfenced again.
    life, _ = life.tick(1000, 1)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, True, False, 1000)
    assert effects == () and life.state == Recovery(42, caught_up=True)
    life, _ = life.tick(1000, 2)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, False, 1010)
    assert effects == (BecomeUnfenced(),) and life.state == Running(42)


def test_fenced_by_the_controller_while_running() -> None:
    life = running(0)
    life, _ = life.tick(100, 1)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, True, False, 101)
    assert effects == (BecomeFenced(),) and isinstance(life.state, Recovery)


def test_controlled_shutdown_waits_for_the_controller() -> None:
    life = running(0)
    with capture_logs() as events:
        life, effects = life.on_shutdown_requested(10)
    assert effects == () and life.state == PendingControlledShutdown(42) and life.serving
    assert events[0]["event"] == "controlled_shutdown_started"
    life, effects = life.tick(10, 5)  # at once, not after the interval
    assert effects == (SendHeartbeat(3, 42, 5, want_fence=False, want_shutdown=True),)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, False, 12)
    assert effects == () and isinstance(life.state, PendingControlledShutdown)
    life, _ = life.tick(112, 5)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, True, 115)
    assert effects == (BecomeFenced(), Exit()) and life.state == ShuttingDown()


def test_controlled_shutdown_asks_again_soon_after_the_first_not_yet_then_every_interval() -> None:
    """As Kafka's broker: the controller usually has moved the leaderships by the second ask, 50 ms later."""
    life = running(0)
    life, _ = life.on_shutdown_requested(10)
    life, _ = life.tick(10, 5)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, False, 12)
    assert effects == () and life.state == PendingControlledShutdown(42, answered=True)
    assert life.tick(61, 5)[1] == ()
    life, effects = life.tick(62, 5)
    assert effects == (SendHeartbeat(3, 42, 5, want_fence=False, want_shutdown=True),)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, False, 63)
    assert effects == () and life.tick(162, 5)[1] == ()  # a second "not yet": the usual interval
    life, effects = life.tick(163, 6)
    assert effects == (SendHeartbeat(3, 42, 6, want_fence=False, want_shutdown=True),)


def test_shutdown_before_running_exits_at_once() -> None:
    life = registered()
    life, effects = life.on_shutdown_requested(1)
    assert effects == (BecomeFenced(), Exit()) and life.state == ShuttingDown()


def test_controlled_shutdown_without_a_controller_ends_at_the_session_timeout() -> None:
    life = running(0)
    life, _ = life.on_shutdown_requested(10)
    life, _ = life.tick(10, 5)
    life, effects = life.on_controller_unreachable(20)
    assert effects == ()
    life, effects = life.tick(450, 5)
    assert effects == (BecomeFenced(), Exit()) and life.state == ShuttingDown()


def test_a_rejected_heartbeat_is_not_contact() -> None:
    life = running(0)
    life, _ = life.tick(100, 1)
    with capture_logs() as events:
        life, effects = life.on_heartbeat_response(ErrorCode.NOT_CONTROLLER, False, False, False, 110)
    assert effects == () and life.last_contact_ms == 0
    assert events[0]["event"] == "broker_heartbeat_rejected" and events[0]["actual_error"] == "NOT_CONTROLLER"


def test_a_heartbeat_the_busy_controller_timed_out_is_contact_and_a_controlled_shutdown_waits_on() -> None:
    # REQUEST_TIMED_OUT: the heartbeat reached the active controller, whose queue was busy (a write of thousands of
    # records); it renewed our session with it, so it has not fenced us and the shutdown is not abandoned.
    life = running(0)
    life, _ = life.on_shutdown_requested(10)
    for now in range(100, 1000, 100):
        life, _ = life.tick(now, 5)
        life, effects = life.on_heartbeat_response(ErrorCode.REQUEST_TIMED_OUT, True, False, False, now + 50)
        assert effects == () and life.last_contact_ms == now + 50
    assert isinstance(life.state, PendingControlledShutdown)  # 990 ms in, over twice the session timeout (450)
    life, _ = life.tick(1000, 5)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, True, True, 1010)
    assert effects == (BecomeFenced(), Exit())


def test_a_stale_broker_epoch_makes_the_broker_register_again_and_stop_leading_until_unfenced() -> None:
    # The controller lost (or replaced) this registration: heartbeating on with it would be refused forever.
    life = running(0)
    life, _ = life.tick(100, 1)
    with capture_logs() as events:
        life, effects = life.on_heartbeat_response(ErrorCode.STALE_BROKER_EPOCH, False, False, False, 110)
    assert effects == (BecomeFenced(),) and life.state == Registering() and not life.serving
    assert events[0]["event"] == "broker_epoch_stale" and events[0]["broker_epoch"] == 42
    life, effects = life.tick(110, 1)  # at once, same incarnation: the controller gives it a new epoch
    assert effects == (SendRegistration(3, "inc-1"),)
    life, _ = life.on_registration_response(ErrorCode.NONE, 57, 115)
    assert life.state == Recovery(57)
    life, effects = life.tick(115, 60)
    assert effects == (SendHeartbeat(3, 57, 60, want_fence=True, want_shutdown=False),)


def test_a_stale_broker_epoch_during_controlled_shutdown_exits() -> None:
    life = running(0)
    life, _ = life.on_shutdown_requested(10)
    life, _ = life.tick(10, 5)
    life, effects = life.on_heartbeat_response(ErrorCode.STALE_BROKER_EPOCH, False, False, False, 20)
    assert effects == (BecomeFenced(), Exit()) and life.state == ShuttingDown()


def test_should_shutdown_is_acted_on_only_after_asking_to_shut_down() -> None:
    # Someone else's want_shutdown heartbeat put this broker in controlled shutdown: its answer fences us, and we
    # catch up and are unfenced again instead of stopping.
    life = running(0)
    life, _ = life.tick(100, 1)
    with capture_logs() as events:
        life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, True, True, 110)
    assert effects == (BecomeFenced(),) and life.state == Recovery(42, caught_up=True)
    assert [e["event"] for e in events] == ["should_shutdown_ignored", "broker_fenced_by_controller"]
    life, effects = life.tick(210, 2)
    assert effects == (SendHeartbeat(3, 42, 2, want_fence=False, want_shutdown=False),)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, False, 220)
    assert effects == (BecomeUnfenced(),) and life.state == Running(42) and not life.exited


def test_offline_log_dirs_are_told_at_once_and_the_broker_exits_once_fenced() -> None:
    life = running(0)
    life, effects = life.on_log_dirs_offline(("/data/3",), 10)
    assert effects == (BecomeFenced(),)
    life, effects = life.tick(10, 5)  # at once, not after the interval
    assert effects == (SendHeartbeat(3, 42, 5, False, False, offline_log_dirs=("/data/3",)),)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, True, False, 12)
    assert effects == (BecomeFenced(), Exit()) and life.state == ShuttingDown()


def test_offline_log_dirs_before_registration_exit_at_once() -> None:
    life, _ = Lifecycle(CONFIG).start("inc-1", 0)
    life, effects = life.on_log_dirs_offline(("/data/3",), 1)
    assert effects == (BecomeFenced(), Exit()) and life.exited


def test_initially_caught_up_once_the_controller_says_so_and_for_the_rest_of_the_process() -> None:
    life = registered()
    assert not life.initially_caught_up  # registered, but the metadata may not reach the registration yet
    life, _ = life.tick(0, 10)
    life, _ = life.on_heartbeat_response(ErrorCode.NONE, False, True, False, 5)
    assert not life.initially_caught_up
    life, _ = life.tick(200, 60)
    with capture_logs() as logs:
        life, _ = life.on_heartbeat_response(ErrorCode.NONE, True, True, False, 205)
    assert life.initially_caught_up
    assert [entry["event"] for entry in logs].count("broker_metadata_caught_up") == 1
    life, _ = life.tick(400, 60)
    life, _ = life.on_heartbeat_response(ErrorCode.STALE_BROKER_EPOCH, False, True, False, 405)
    assert isinstance(life.state, Registering) and life.initially_caught_up  # a new registration opens nothing anew


def test_initially_unfenced_only_once_the_controller_unfenced_us_and_for_the_rest_of_the_process() -> None:
    life = registered()
    life, _ = life.tick(0, 10)
    life, _ = life.on_heartbeat_response(ErrorCode.NONE, True, True, False, 5)
    assert life.initially_caught_up and not life.initially_unfenced  # caught up opens no listener yet
    life, _ = life.tick(200, 60)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, False, False, 205)
    assert effects == (BecomeUnfenced(),) and life.initially_unfenced
    life, _ = life.tick(400, 60)
    life, effects = life.on_heartbeat_response(ErrorCode.NONE, True, True, False, 405)
    assert effects == (BecomeFenced(),) and life.initially_unfenced  # a later fencing closes no listener
    life, _ = life.tick(600, 60)
    life, _ = life.on_heartbeat_response(ErrorCode.STALE_BROKER_EPOCH, False, True, False, 605)
    assert isinstance(life.state, Registering) and life.initially_unfenced


def test_an_unfencing_answer_is_a_catch_up() -> None:
    assert running().initially_caught_up
