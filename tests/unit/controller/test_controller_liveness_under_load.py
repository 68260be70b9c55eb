"""A busy controller does not fence live brokers: a heartbeat the event queue reaches past its deadline is answered
REQUEST_TIMED_OUT but renews the session (Kafka's processExpiredBrokerHeartbeat), and time the controller's own loop
stood still (one long generation or replay) is not held against the brokers' sessions. A heartbeat whose call the
broker gave up on while it waited in the queue renews the session too."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from manual_raft import active_controller, registered_brokers, until

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.requests import BrokerHeartbeatRequest
from minikafka.kraft_controller.metadata.records import BrokerStatus
from minikafka.kraft_controller.quorum_controller import QuorumController
from minikafka.kraft_controller.service import ControllerService
from minikafka.pb import controller_pb2

SESSION_MS = 9000  # broker.session.timeout.ms's default


async def unfenced_broker(controller: QuorumController, now: list[int]) -> int:
    """Broker 7 registered and unfenced at time 0; its broker epoch."""
    return (await registered_brokers(controller, (7,), now[0]))[7]


def stall(now: list[int], by_ms: int) -> ControllerResult[None]:
    """A write whose generation holds the loop for `by_ms` (as a CreateTopics of thousands of partitions)."""
    now[0] += by_ms
    return ControllerResult((), None)


def status(controller: QuorumController) -> BrokerStatus:
    registration = controller.state.committed.broker(7)
    assert registration is not None
    return registration.status


async def test_a_heartbeat_reached_past_its_deadline_is_timed_out_and_still_renews_the_session() -> None:
    controller, _raft = await active_controller(auto_commit=True)
    now = [0]
    controller.clock = lambda: now[0]
    try:
        epoch = await unfenced_broker(controller, now)
        ran: list[int] = []
        heartbeat = BrokerHeartbeatRequest(7, epoch, current_metadata_offset=200)
        busy = asyncio.ensure_future(controller.submit(lambda: stall(now, 5000)))
        late = asyncio.ensure_future(
            controller.submit(lambda: ran.append(1) or controller.state.broker_heartbeat(heartbeat, 0), 1000)
        )
        await busy
        with pytest.raises(KafkaError) as raised:
            await late
        assert raised.value.code == ErrorCode.REQUEST_TIMED_OUT and ran == []  # never generated
        controller.state.expired_heartbeat(heartbeat, 4000)  # what the service does on that answer
        assert controller.state.heartbeats.sessions[7].last_contact_ms == 4000
        controller.state.expired_heartbeat(BrokerHeartbeatRequest(7, epoch + 1, 300), 8000)  # another incarnation's
        assert controller.state.heartbeats.sessions[7].last_contact_ms == 4000
    finally:
        await controller.stop()


async def test_a_heartbeat_the_broker_gave_up_on_in_the_queue_still_renews_the_session() -> None:
    controller, _raft = await active_controller(auto_commit=True)
    now = [0]
    controller.clock = lambda: now[0]
    service = ControllerService(controller, {1: "127.0.0.1:1"}, lambda: None, "cluster")  # type: ignore[arg-type,return-value]
    try:
        epoch = await unfenced_broker(controller, now)
        queue = controller._tasks[0]  # the event queue, held up here as by a write of thousands of records
        queue.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await queue
        now[0] = 3000
        request = controller_pb2.BrokerHeartbeatRequest(
            broker_id=7,
            broker_epoch=epoch,
            current_metadata_offset=200,
            want_shutdown=True,  # a change: queued
        )
        call = asyncio.ensure_future(service.BrokerHeartbeat(request, None))
        await until(lambda: bool(controller._queue), "the heartbeat waits in the queue")
        call.cancel()  # the broker's call deadline passed first
        with pytest.raises(asyncio.CancelledError):
            await call
        assert controller.state.heartbeats.sessions[7].last_contact_ms == 3000
    finally:
        await controller.stop()


async def test_a_stall_of_the_controller_longer_than_the_session_fences_no_broker() -> None:
    controller, _raft = await active_controller(auto_commit=True)
    now = [0]
    controller.clock = lambda: now[0]
    try:
        await unfenced_broker(controller, now)
        await controller.submit(lambda: stall(now, SESSION_MS + 5000))  # the loop did not run for 14 s
        await controller.submit(controller._tick)  # the tick right behind it, in the same loop turn
        assert status(controller) is BrokerStatus.UNFENCED
    finally:
        await controller.stop()


async def test_a_broker_silent_while_the_controller_runs_is_still_fenced() -> None:
    controller, _raft = await active_controller(auto_commit=True)
    now = [0]
    controller.clock = lambda: now[0]
    try:
        await unfenced_broker(controller, now)
        for _ in range(SESSION_MS // 500 + 2):  # the loop runs all along: the controller hears nothing from 7
            now[0] += 500
            controller._account_stall(now[0])
        await controller.submit(controller._tick)
        await until(lambda: status(controller) is BrokerStatus.FENCED, "broker 7 fenced")
    finally:
        await controller.stop()


async def test_a_heartbeat_whose_answer_waits_for_a_commit_keeps_the_session_until_answered() -> None:
    controller, _raft = await active_controller(auto_commit=True)
    now = [0]
    controller.clock = lambda: now[0]
    try:
        epoch = await unfenced_broker(controller, now)
        heartbeat = BrokerHeartbeatRequest(7, epoch, current_metadata_offset=300)
        controller.state.heartbeat_awaiting_answer(7)  # generated at 0, its answer behind a slow commit
        for _ in range(SESSION_MS // 500 + 2):
            now[0] += 500
            controller._account_stall(now[0])
        await controller.submit(controller._tick)
        assert status(controller) is BrokerStatus.UNFENCED  # the broker cannot speak while we hold its heartbeat
        controller.state.heartbeat_answered(heartbeat, now[0])  # answered: its silence counts from here
        assert controller.state.heartbeats.sessions[7].last_contact_ms == now[0]
        for _ in range(SESSION_MS // 500 + 2):
            now[0] += 500
            controller._account_stall(now[0])
        await controller.submit(controller._tick)
        await until(lambda: status(controller) is BrokerStatus.FENCED, "broker 7 fenced once silent after the answer")
    finally:
        await controller.stop()
