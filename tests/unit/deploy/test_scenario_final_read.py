"""The scenarios' final read stops at the log end its leader confirms, and otherwise waits out its idle polls."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from minikafka.client.consumer import ConsumerRecord, ReadEnd
from minikafka.deploy.scenario.clients import read_to_log_end


@dataclass
class FakeConsumer:
    """Serves `batches` (one per poll, then nothing) of partition 0; the leader's latest offset is `log_end`."""

    batches: list[list[int]]
    log_end: int
    high_watermark: int
    polls: int = 0
    position: int = 0
    confirmed: int | None = field(default=None)

    async def poll(self) -> list[ConsumerRecord]:
        self.polls += 1
        offsets = self.batches.pop(0) if self.batches else []
        if offsets:
            self.position = offsets[-1] + 1
        return [ConsumerRecord("t", 0, o, None, f"v{o}".encode(), 0, 0) for o in offsets]

    def caught_up(self) -> bool:
        return all(end.reached for end in self.read_ends())

    async def confirm_log_ends(self) -> None:
        self.confirmed = self.log_end

    def read_ends(self) -> list[ReadEnd]:
        return [ReadEnd("t", 0, 0, self.position, self.high_watermark, None, self.confirmed)]


def test_the_read_stops_two_empty_polls_after_reaching_the_confirmed_log_end() -> None:
    consumer = FakeConsumer([[0, 1], [2]], log_end=3, high_watermark=3)
    read = asyncio.run(read_to_log_end(consumer, 20))  # type: ignore[arg-type]
    assert read == {0: "v0", 1: "v1", 2: "v2"} and consumer.polls == 4


def test_a_log_end_beyond_the_position_keeps_the_read_going_until_its_idle_polls() -> None:
    # The leader last reported a high watermark of 3, but its latest offset is 5: records may lie beyond.
    consumer = FakeConsumer([[0, 1], [2]], log_end=5, high_watermark=3)
    read = asyncio.run(read_to_log_end(consumer, 20))  # type: ignore[arg-type]
    assert len(read) == 3 and consumer.polls == 2 + 20


def test_a_read_short_of_the_high_watermark_waits_out_its_idle_polls() -> None:
    consumer = FakeConsumer([[0]], log_end=1, high_watermark=4)
    asyncio.run(read_to_log_end(consumer, 5))  # type: ignore[arg-type]
    assert consumer.polls == 1 + 5 and consumer.confirmed is None  # never confirmed: it was not caught up
