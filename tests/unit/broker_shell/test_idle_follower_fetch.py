"""A follower's idle incremental Fetch on the leader (a real ReplicaManager, logs and fetch session cache, on a clock
the test sets): it reads only partitions that changed or are not settled, an idle follower stays caught up for the
ISR without being read, and one that stops fetching or falls behind is still shrunk out on time."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from minikafka.broker import replica_manager as replica_manager_module
from minikafka.broker.fetch_session import INITIAL_EPOCH, FetchSessionCache, PartitionFetchState
from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.broker.metadata_listener import MetadataDelta
from minikafka.broker.replica.partition import Leader
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.requests import fetch as fetch_module
from minikafka.broker.requests.fetch import FetchAnswer, FetchRequest, handle_fetch
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    Partition,
    PartitionChange,
    RegisterBroker,
    Topic,
    UnfenceBroker,
)
from minikafka.storage.log_config import LogConfig

TOPIC_ID = uuid.UUID("11111111-2222-4333-8444-555555555555")
PARTITIONS = 3
FOLLOWER = 1  # broker 2, the other follower, never fetches
LAG_MS = 30_000  # replica.lag.time.max.ms
BATCH = build_batch([Record(b"v")])


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class Leading:
    """Broker 0 leading `orders` (RF 3, ISR 0,1,2), follower 1's session, and the partitions each Fetch read."""

    def __init__(self, tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
        self.clock = clock
        config = SimpleNamespace(node_id=0, min_insync_replicas=1, replica_lag_time_max_ms=LAG_MS, set_keys=frozenset())
        records: list[Any] = [RegisterBroker(b, str(b)) for b in (0, 1, 2)]
        records.append(Topic("orders", TOPIC_ID))
        records += [Partition(TOPIC_ID, p, (0, 1, 2), (0, 1, 2), 0) for p in range(PARTITIONS)]
        self.metadata = SimpleNamespace(image=self.replay(MetadataImage(), records))
        logs = LogManager(tmp_path, lambda topic: LogConfig())
        self.manager = ReplicaManager(config, logs, self.metadata, None, lambda: 10, lambda: True)  # type: ignore[arg-type]
        self.publish()
        self.sessions = FetchSessionCache(10, lambda: 42)
        self.epoch = INITIAL_EPOCH
        self.log_starts: dict[int, int] = {}  # of the last answer's partitions
        self.reads: list[int] = []
        follower_fetch = self.manager.follower_fetch

        def counted(tp: TopicPartition, *args: Any, **kwargs: Any) -> Any:
            self.reads.append(tp.partition)
            return follower_fetch(tp, *args, **kwargs)

        monkeypatch.setattr(self.manager, "follower_fetch", counted)

    @staticmethod
    def replay(image: MetadataImage, records: list[Any]) -> MetadataImage:
        for record in records:
            image = image.replay(record, image.offset + 1)
        return image

    def publish(self, *records: Any) -> None:
        image = self.metadata.image = self.replay(self.metadata.image, list(records))
        changed = tuple((topic.topic_id, index) for topic, index, _ in image.partitions())
        self.manager.on_metadata(MetadataDelta(image, changed, image.offset))

    async def fetch(
        self,
        now: int,
        offsets: dict[int, int] | None = None,
        max_wait_ms: int = 0,
        log_starts: dict[int, int] | None = None,
    ) -> dict[int, tuple[ErrorCode, int]]:
        """Follower 1's next Fetch at `now` listing `offsets` (all partitions at 0 when it opens the session), with
        the follower's `log_starts` (0 where not given): partition -> (error, bytes of records) of the answer;
        `reads` holds what it read."""
        self.clock.now = now
        if offsets is None:
            offsets = {p: 0 for p in range(PARTITIONS)} if self.epoch == INITIAL_EPOCH else {}
        starts = log_starts or {}
        lines = [
            PartitionFetchState(TOPIC_ID.bytes, "orders", p, 0, offset, 0 if offset else -1, starts.get(p, 0), 1 << 20)
            for p, offset in offsets.items()
        ]
        self.reads.clear()
        session_id = 42 if self.epoch != INITIAL_EPOCH else 0
        request = FetchRequest(FOLLOWER, -1, max_wait_ms, 1, 1 << 20, session_id, self.epoch, lines)
        answer: FetchAnswer = await handle_fetch(self.manager, self.sessions, request)
        assert answer.error == ErrorCode.NONE
        self.epoch += 1
        self.log_starts = {p.partition: p.log_start_offset for t in answer.topics for p in t.partitions}
        return {p.partition: (p.error, len(p.records)) for t in answer.topics for p in t.partitions}

    async def park(
        self, now: int, offsets: dict[int, int] | None = None, max_wait_ms: int = 0
    ) -> asyncio.Task[dict[int, tuple[ErrorCode, int]]]:
        """Follower 1's next Fetch at `now` listing `offsets`, once it waits for news (`max_wait_ms` real time)."""
        parked = asyncio.create_task(self.fetch(now, offsets, max_wait_ms=max_wait_ms))
        deadline = time.monotonic() + 10
        while not self.manager._parked[True] and time.monotonic() < deadline:  # noqa: SLF001 - the long poll's waiters
            await asyncio.sleep(0)
        assert not parked.done()
        return parked

    def produce(self, now: int, partition: int) -> None:
        self.clock.now = now
        assert self.manager.produce(TopicPartition("orders", partition), BATCH, 1, 30000).result().error == 0

    def leader(self, partition: int) -> Leader:
        leader = self.manager.replicas[TopicPartition("orders", partition)].leader
        assert leader is not None
        return leader

    def shrunk(self, partition: int, now: int) -> frozenset[int]:
        """The followers an ISR shrink check at `now` would remove."""
        _, proposal = self.leader(partition).maybe_shrink_isr(now, {})
        return frozenset({1, 2}) - (proposal.isr if proposal is not None else frozenset({1, 2}))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(replica_manager_module, "monotonic_ms", clock)
    monkeypatch.setattr(fetch_module, "monotonic_ms", clock)
    return clock


@pytest.fixture
async def leading(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Iterator[Leading]:
    leading = Leading(tmp_path, clock, monkeypatch)
    yield leading
    await leading.manager.stop()


async def test_an_idle_follower_stays_caught_up_without_its_partitions_being_read(leading: Leading) -> None:
    assert await leading.fetch(1000) == {p: (ErrorCode.NONE, 0) for p in range(PARTITIONS)}
    assert leading.reads == [0, 1, 2]  # the full fetch that opens the session reads every partition
    for now in (2000, 50_000, 100_000):
        assert await leading.fetch(now) == {}
        assert leading.reads == []
    leading.produce(100_001, 0)
    # The session's last Fetch vouches for the follower as of 100,000, though no Fetch read partition 0 since 1,000.
    assert leading.leader(0).follower(FOLLOWER).last_caught_up_ms == 100_000  # type: ignore[union-attr]
    assert leading.shrunk(0, 100_002) == {2}  # broker 2 never fetched: out; the idle follower stays


async def test_a_partition_with_new_data_is_read_and_answered_alone(leading: Leading) -> None:
    await leading.fetch(1000)
    await leading.fetch(2000)
    leading.produce(2500, 1)
    assert await leading.fetch(3000) == {1: (ErrorCode.NONE, len(BATCH))}
    assert leading.reads == [1]
    assert await leading.fetch(3500, {1: 1}) == {}  # caught up: the HWM still waits for broker 2
    assert leading.reads == [1]
    assert await leading.fetch(4000) == {} and leading.reads == []  # settled again


async def test_a_new_leader_epoch_is_answered_at_every_fetch_until_the_follower_moves(leading: Leading) -> None:
    await leading.fetch(1000)
    leading.clock.now = 1500
    leading.publish(PartitionChange(TOPIC_ID, 2, replicas=(0, 1), isr=(0, 1)))  # broker 2 leaves: a new epoch
    for now in (2000, 3000):
        assert await leading.fetch(now) == {2: (ErrorCode.FENCED_LEADER_EPOCH, 0)}
        assert leading.reads == [2]


async def test_a_follower_that_stops_fetching_is_shrunk_a_lag_after_its_last_fetch(leading: Leading) -> None:
    await leading.fetch(1000)
    await leading.fetch(5000)  # its last Fetch
    leading.produce(6000, 0)
    assert leading.shrunk(0, 5000 + LAG_MS) == {2}
    assert leading.shrunk(0, 5001 + LAG_MS) == {1, 2}


async def test_a_follower_behind_after_an_append_is_not_counted_caught_up(leading: Leading) -> None:
    await leading.fetch(1000)
    await leading.fetch(5000)
    leading.produce(6000, 0)
    for now in range(7000, 40_000, 3000):  # it fetches on, but never takes the new batch
        assert await leading.fetch(now) == {0: (ErrorCode.NONE, len(BATCH))}
        assert leading.reads == [0]
    assert leading.leader(0).follower(FOLLOWER).last_caught_up_ms == 5000  # type: ignore[union-attr]
    assert leading.shrunk(0, 5001 + LAG_MS) == {1, 2}


async def test_a_settled_partition_listed_again_counts_the_fetches_that_skipped_it(leading: Leading) -> None:
    leading.produce(500, 0)
    await leading.fetch(1000)
    await leading.fetch(1500, {0: 1})  # at the log end: settled
    await leading.fetch(9000)
    # Its fetch state moves back (its log was cut): this Fetch does not find it caught up, but the ones before did.
    await leading.fetch(12_000, {0: 0})
    assert leading.leader(0).follower(FOLLOWER).last_caught_up_ms == 9000  # type: ignore[union-attr]


async def test_a_log_start_moved_by_delete_records_is_answered(leading: Leading) -> None:
    leading.produce(500, 0)
    await leading.fetch(1000)
    await leading.fetch(1500, {0: 1})
    leading.clock.now = 1600
    leading.publish(PartitionChange(TOPIC_ID, 0, isr=(0, 1)))  # without broker 2 the HWM reaches 1
    assert await leading.fetch(2000) == {0: (ErrorCode.NONE, 0)}  # the new HWM
    assert await leading.fetch(2500) == {}
    assert leading.manager.delete_records(TopicPartition("orders", 0), 1).error == ErrorCode.NONE
    assert await leading.fetch(3000) == {0: (ErrorCode.NONE, 0)} and leading.log_starts == {0: 1}


async def test_an_idle_fetch_waits_for_news_and_is_woken_by_an_append(leading: Leading) -> None:
    await leading.fetch(1000)
    # Nothing read, but the session's partitions are asked for: it long-polls.
    parked = await leading.park(2000, max_wait_ms=60_000)
    leading.produce(2500, 2)
    assert await asyncio.wait_for(parked, 10) == {2: (ErrorCode.NONE, len(BATCH))}
    assert leading.reads == [2]


async def test_delete_records_completes_when_the_log_start_moves_while_a_fetch_waits(leading: Leading) -> None:
    """DeleteRecords end to end: the follower's Fetch that reads partition 0 at the log end parks; the leader's log
    start moves meanwhile; the Fetch times out unwoken. The follower must still learn the new log start from a later
    Fetch and report its own, which completes the deletion."""
    tp = TopicPartition("orders", 0)
    image = leading.metadata.image
    # Broker 2 out of the ISR and fenced (not waited for); brokers 0 and 1 alive, so the deletion waits for 1.
    leading.clock.now = 100
    unfenced = [UnfenceBroker(b, image.brokers[b].broker_epoch) for b in (0, 1)]
    leading.publish(*unfenced, PartitionChange(TOPIC_ID, 0, isr=(0, 1)))
    leading.produce(500, 0)
    assert await leading.fetch(1000) == {p: (ErrorCode.NONE, len(BATCH) if p == 0 else 0) for p in range(PARTITIONS)}
    # At the log end: partition 0 is settled by this read (which moves the HWM to 1), and the Fetch waits.
    parked = await leading.park(1500, {0: 1}, max_wait_ms=100)
    deleting = asyncio.create_task(leading.manager.delete_records_replicated(tp, 1, timeout_s=30))
    await asyncio.sleep(0)  # the deletion moves the leader's log start now, while the Fetch waits
    assert leading.manager.replicas[tp].log.log_start_offset == 1
    assert await asyncio.wait_for(parked, 10) == {0: (ErrorCode.NONE, 0)}  # timed out unwoken: the HWM, 1
    high_watermark, log_start, listed = 1, 0, False  # the follower's
    for now in range(2000, 10_000, 500):
        if deleting.done():
            break
        answer = await leading.fetch(now, {0: 1} if listed else {}, log_starts={0: log_start})
        moved = min(leading.log_starts[0], high_watermark) if 0 in answer else log_start
        # The follower follows the leader's log start (never past its HWM); a changed fetch state is listed.
        listed, log_start = moved > log_start, max(log_start, moved)
        await asyncio.sleep(0)
    done = deleting.done()
    deleting.cancel()  # no-op once done
    assert done, "the follower never learnt the new log start"
    result = deleting.result()
    assert (result.error, result.low_watermark) == (ErrorCode.NONE, 1)


async def test_a_fenced_follower_out_of_the_isr_is_read_again_only_once_it_is_unfenced(leading: Leading) -> None:
    """A rejoining broker fetches while still fenced: its partitions out of the ISR are not read at each of its
    Fetches (nothing to decide for it), but they are once the metadata unfences it (an expansion may be due)."""
    leading.clock.now = 100
    leading.publish(PartitionChange(TOPIC_ID, 0, isr=(0, 2)))  # follower 1 out; its broker is fenced (registered)
    await leading.fetch(1000)
    for now in (2000, 3000):
        assert await leading.fetch(now) == {} and leading.reads == []
    leading.clock.now = 3500
    leading.publish(UnfenceBroker(1, leading.metadata.image.brokers[1].broker_epoch))
    await leading.fetch(4000)
    assert leading.reads == [0]
