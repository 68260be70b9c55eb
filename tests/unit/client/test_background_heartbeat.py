"""`consume --group-protocol consumer` heartbeats from a task of its own: a member whose first offset lookup (or a
poll, or a slow write) takes longer than its session timeout keeps heartbeating meanwhile, so it is not fenced
before its first read; a heartbeat that asks the member to rejoin makes the consume loop rejoin; and a member
that has not heard from its coordinator for a session timeout joins again before handing on another record."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace
from typing import Any

from minikafka.client.consumer import ConsumerRecord
from minikafka.client.consumer_protocol_member import ConsumerProtocolMember
from minikafka.client.group_consume import BackgroundHeartbeat, GroupConsumer
from minikafka.client.group_member import GroupTimeouts
from minikafka.common.errors import ErrorCode
from minikafka.sim.virtual_loop import run_virtual


class FakeMember:
    def __init__(self, answers: list[ErrorCode] | None = None) -> None:
        self.group, self.generation, self.member_id = "g", 1, "m"
        self.timeouts = GroupTimeouts(heartbeat_interval_ms=5)
        self.beats = 0
        self.joins = 0
        self.answers = list(answers or [])
        self.three_beats = asyncio.Event()

    def in_group(self) -> bool:
        return True

    async def join(self) -> list[tuple[str, int]]:
        self.joins += 1
        return [("t", 0)]

    def session_start_s(self) -> float:
        return asyncio.get_running_loop().time()

    async def committed(self, partitions: Any) -> dict:
        return {}

    async def commit(self, offsets: Any) -> ErrorCode:
        return ErrorCode.NONE

    async def heartbeat(self) -> ErrorCode:
        self.beats += 1
        if self.beats >= 3:
            self.three_beats.set()
        return self.answers.pop(0) if self.answers else ErrorCode.NONE


class SlowConsumer:
    """Its offset lookup for the first assignment returns only after the member heartbeated three times."""

    def __init__(self, member: FakeMember) -> None:
        self.member = member
        self.positions: dict = {}
        self.fetch_states: dict = {}

    async def assign(self, topic: str, partitions: list[int], start: Any) -> None:
        await self.member.three_beats.wait()

    async def poll(self) -> list:
        return []

    def caught_up(self) -> bool:
        return True


def consume(background: bool) -> FakeMember:
    member = FakeMember()

    async def scenario() -> None:
        runner = GroupConsumer(SlowConsumer(member), member, True, False, background_heartbeat=background)  # type: ignore[arg-type]
        await asyncio.wait_for(runner.run(timeout_ms=0, limit=None), timeout=10)

    asyncio.run(scenario())
    return member


def test_the_member_heartbeats_while_its_first_offset_lookup_is_slow() -> None:
    member = consume(background=True)
    assert member.beats >= 3 and member.joins == 1


def test_a_heartbeat_asking_to_rejoin_sets_the_loops_rejoin() -> None:
    async def scenario() -> tuple[bool, int]:
        member = FakeMember([ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS])
        background = BackgroundHeartbeat(member)  # type: ignore[arg-type]
        background.start()
        try:
            await asyncio.wait_for(background.rejoin.wait(), timeout=10)
            return background.rejoin.is_set(), member.beats
        finally:
            await background.stop()

    asked, beats = asyncio.run(scenario())
    assert asked and beats == 2


class StalledCoordinatorMember(FakeMember):
    """Its second heartbeat gets no answer for three session timeouts (a paused coordinator), then a retriable
    error; the first join and the rejoin after it succeed."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts = GroupTimeouts(heartbeat_interval_ms=5, session_timeout_ms=100)

    async def heartbeat(self) -> ErrorCode:
        self.beats += 1
        if self.beats == 2:
            await asyncio.sleep(0.3)  # simulated time: the coordinator's stall, not a wait for the test
            return ErrorCode.NOT_COORDINATOR
        return ErrorCode.NONE


class OneRecordAPoll:
    def __init__(self, member: FakeMember) -> None:
        self.member = member
        self.positions: dict = {}
        self.fetch_states: dict = {}
        self.polls = 0

    async def assign(self, topic: str, partitions: list[int], start: Any) -> None:
        return None

    async def poll(self) -> list:
        self.polls += 1
        await asyncio.sleep(0.001)
        return [ConsumerRecord("t", 0, self.polls, None, b"v", 0, 0)]

    def caught_up(self) -> bool:
        return True


def test_records_polled_after_a_session_timeout_without_the_coordinator_are_not_handed_on() -> None:
    """Kafka's coordinator fences a member it has not heard from for a session timeout and may give its partitions
    to another: the loop joins again instead of handing on what it polled then (they would be read below what the
    group committed meanwhile)."""
    member = StalledCoordinatorMember()
    consumer = OneRecordAPoll(member)
    handed_on: list[tuple[float, int]] = []

    class Recording(GroupConsumer):
        def write(self, records: list, limit: int | None, consumed: int) -> int:
            handed_on.extend((asyncio.get_running_loop().time(), r.offset) for r in records)
            return consumed + len(records)

    async def scenario() -> None:
        runner = Recording(consumer, member, True, False)  # type: ignore[arg-type]
        await runner.run(timeout_ms=2**31, limit=20)

    run_virtual(scenario())
    assert member.joins == 2  # the first join, and the one after the stall
    stalled_until = 0.3
    assert all(at < 0.05 or at > stalled_until for at, _ in handed_on)
    after = [offset for at, offset in handed_on if at > stalled_until]
    assert after and after[0] > max(offset for at, offset in handed_on if at < stalled_until) + 1  # one poll dropped


class AssignHangsOnce(OneRecordAPoll):
    """The first assignment's offset lookup hangs for three session timeouts (its leader paused)."""

    async def assign(self, topic: str, partitions: list[int], start: Any) -> None:
        if self.member.joins == 1:
            await asyncio.sleep(0.3)  # simulated time: the leader's stall


def test_a_join_followed_by_a_session_timeout_of_offset_lookups_is_joined_again() -> None:
    """The coordinator last heard the member at its join: if the lookups after it outlast the session timeout,
    the member is fenced already, and its first poll is not handed on."""
    member = FakeMember()
    member.timeouts = GroupTimeouts(heartbeat_interval_ms=5, session_timeout_ms=100)
    consumer = AssignHangsOnce(member)
    handed_on: list[float] = []

    class Recording(GroupConsumer):
        def write(self, records: list, limit: int | None, consumed: int) -> int:
            handed_on.extend(asyncio.get_running_loop().time() for _ in records)
            return consumed + len(records)

    run_virtual(Recording(consumer, member, True, False).run(timeout_ms=2**31, limit=5))  # type: ignore[arg-type]
    assert member.joins == 2 and len(handed_on) == 5 and consumer.polls == 6  # the first poll dropped


class SlowlyAnsweringCoordinator(ConsumerProtocolMember):
    """A KIP-848 member whose coordinator answers each heartbeat 3 s after taking it (its records' commit)."""

    def __init__(self) -> None:
        super().__init__(None, "g", ["t"])  # type: ignore[arg-type]
        self.topic_ids = {"t": uuid.uuid4()}

    async def _send(self, body: object) -> Any:
        await asyncio.sleep(3)
        return SimpleNamespace(error_code=0, member_id="m", member_epoch=1, assignment=None)


def test_a_kip_848_members_session_starts_when_its_accepted_heartbeat_was_sent() -> None:
    """The coordinator restarts the session as it takes the heartbeat, not as its answer arrives."""

    async def scenario() -> tuple[float, float]:
        member = SlowlyAnsweringCoordinator()
        await member.join()
        return member.session_start_s(), asyncio.get_running_loop().time()

    started, answered = run_virtual(scenario())
    assert answered - started >= 3


class AnsweredLate(FakeMember):
    """Its join's answer arrives 80 ms after the coordinator started the session."""

    async def join(self) -> list[tuple[str, int]]:
        self.sent = asyncio.get_running_loop().time()
        await asyncio.sleep(0.08)
        return await super().join()

    def session_start_s(self) -> float:
        return self.sent


class AssignSlowOnce(OneRecordAPoll):
    async def assign(self, topic: str, partitions: list[int], start: Any) -> None:
        if self.member.joins == 1:
            await asyncio.sleep(0.05)  # within a session of the answer, past one of the session's start


def test_a_member_counts_its_session_from_the_coordinators_start_of_it() -> None:
    member = AnsweredLate()
    member.timeouts = GroupTimeouts(heartbeat_interval_ms=5, session_timeout_ms=100)
    consumer = AssignSlowOnce(member)
    run_virtual(GroupConsumer(consumer, member, True, False).run(timeout_ms=2**31, limit=5))  # type: ignore[arg-type]
    assert member.joins == 2 and consumer.polls == 6  # the first poll, past the session, dropped
