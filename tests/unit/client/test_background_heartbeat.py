"""`consume --group-protocol consumer` heartbeats from a task of its own: a member whose first offset lookup (or a
poll, or a slow write) takes longer than its session timeout keeps heartbeating meanwhile, so it is not fenced
before its first read; a heartbeat that asks the member to rejoin makes the consume loop rejoin."""

from __future__ import annotations

import asyncio
from typing import Any

from minikafka.client.group_consume import BackgroundHeartbeat, GroupConsumer
from minikafka.client.group_member import GroupTimeouts
from minikafka.common.errors import ErrorCode


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
