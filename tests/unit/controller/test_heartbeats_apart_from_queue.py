"""A heartbeat that changes nothing and reads only committed state is answered at once, apart from the event queue
(queued, it waited behind every write ahead of it and their commit: seconds behind a fencing of thousands of
partitions); any other is queued, and its broker's session is renewed when it arrives, before a tick queued ahead of
it can expire the session (Kafka updates the contact time before the rest of the heartbeat's handling)."""

from __future__ import annotations

import asyncio
import contextlib

from manual_raft import active_controller, registered_brokers, until

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.cluster_control import unchanged_heartbeat_response
from minikafka.kraft_controller.control.requests import BrokerHeartbeatRequest
from minikafka.kraft_controller.metadata.image import BrokerRegistration
from minikafka.kraft_controller.metadata.records import BrokerStatus
from minikafka.kraft_controller.quorum_controller import QuorumController
from minikafka.kraft_controller.service import ControllerService
from minikafka.pb import controller_pb2

SESSION_MS = 9000  # broker.session.timeout.ms's default


async def broker_7_and_a_held_queue() -> tuple[QuorumController, list[int], int]:
    """An active controller on a settable clock, broker 7 unfenced at 0 (its epoch), and the event queue stopped
    taking writes, as while it generates a write of thousands of records."""
    controller, _raft = await active_controller(auto_commit=True)
    now = [0]
    controller.clock = lambda: now[0]
    epoch = (await registered_brokers(controller, (7,)))[7]
    queue = controller._tasks[0]
    queue.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await queue
    return controller, now, epoch


def service_of(controller: QuorumController) -> ControllerService:
    return ControllerService(controller, {1: "127.0.0.1:1"}, lambda: None, "cluster")  # type: ignore[arg-type,return-value]


async def test_an_unchanged_heartbeat_is_answered_and_renews_the_session_while_the_queue_is_held() -> None:
    controller, now, epoch = await broker_7_and_a_held_queue()
    try:
        now[0] = 3000
        request = controller_pb2.BrokerHeartbeatRequest(broker_id=7, broker_epoch=epoch, current_metadata_offset=200)
        call = asyncio.ensure_future(service_of(controller).BrokerHeartbeat(request, None))
        await until(call.done, "the heartbeat answered")
        answer = call.result()
        assert answer.error_code == ErrorCode.NONE and not answer.is_fenced and answer.is_caught_up
        assert controller.state.heartbeats.sessions[7].last_contact_ms == 3000
        assert controller.state.heartbeats.sessions[7].metadata_offset == 200
    finally:
        await controller.stop()


async def test_a_queued_heartbeat_renews_the_session_on_arrival_before_a_tick_ahead_of_it() -> None:
    controller, now, epoch = await broker_7_and_a_held_queue()
    try:
        now[0] = SESSION_MS - 1  # its last heartbeat was at 0: the session runs out a moment from now
        controller._queue.append((controller._tick, asyncio.get_running_loop().create_future(), None))
        request = controller_pb2.BrokerHeartbeatRequest(
            broker_id=7,
            broker_epoch=epoch,
            current_metadata_offset=200,
            want_shutdown=True,  # a change: queued
        )
        call = asyncio.ensure_future(service_of(controller).BrokerHeartbeat(request, None))
        await until(lambda: len(controller._queue) == 2, "the heartbeat waits in the queue behind the tick")
        assert controller.state.heartbeats.sessions[7].last_contact_ms == SESSION_MS - 1
        now[0] = SESSION_MS + 500  # the queue reaches the tick only now: the session, renewed at arrival, stands
        assert controller.state.tick(now[0]).later is None
        call.cancel()
    finally:
        await controller.stop()


def registration(status: BrokerStatus, epoch: int = 10) -> BrokerRegistration:
    return BrokerRegistration(7, "incarnation-7", epoch, (), "", status)


def test_only_a_heartbeat_that_changes_nothing_on_committed_state_is_answered_apart() -> None:
    unfenced, fenced = registration(BrokerStatus.UNFENCED), registration(BrokerStatus.FENCED)
    beat = BrokerHeartbeatRequest(7, 10, current_metadata_offset=5)
    answer = unchanged_heartbeat_response(unfenced, unfenced, beat)
    assert answer is not None and not answer.is_fenced and not answer.is_caught_up and not answer.should_shutdown
    answer = unchanged_heartbeat_response(fenced, fenced, beat)  # fenced, not caught up: stays fenced
    assert answer is not None and answer.is_fenced
    # A change of its registration pending (a fencing proposed, not committed): the queue answers, after it.
    assert unchanged_heartbeat_response(unfenced, fenced, beat) is None
    assert unchanged_heartbeat_response(unfenced, registration(BrokerStatus.UNFENCED), beat) is None
    assert unchanged_heartbeat_response(None, None, beat) is None
    assert unchanged_heartbeat_response(unfenced, unfenced, BrokerHeartbeatRequest(7, 9, 5)) is None  # stale epoch
    caught_up = BrokerHeartbeatRequest(7, 10, current_metadata_offset=10)
    assert unchanged_heartbeat_response(fenced, fenced, caught_up) is None  # Unfence: records to write
    for wants in ({"want_shutdown": True}, {"want_fence": True}, {"offline_log_dirs": ("/d",)}):
        assert unchanged_heartbeat_response(unfenced, unfenced, BrokerHeartbeatRequest(7, 10, 5, **wants)) is None
    shutting = registration(BrokerStatus.CONTROLLED_SHUTDOWN)
    assert unchanged_heartbeat_response(shutting, shutting, beat) is None
