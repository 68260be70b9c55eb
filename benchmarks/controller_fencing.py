"""How long the active controller's event loop is held while it fences, unfences and takes back into the ISRs a broker
that is a replica of N partitions (RF 3 on 3 brokers): in-process, with a fake Raft that commits each append a loop
turn later, so what is measured is the controller's own generation, application, encoding and replay, and a
follower controller's replay of the same records.

    .venv/bin/python benchmarks/controller_fencing.py [--partitions 10000] [--rounds 1]
    PYTHONPATH=/tmp/parent/src .venv/bin/python benchmarks/controller_fencing.py   # another tree, same script

Per scenario it prints the longest gap between two turns of a coroutine that does nothing but yield (the longest
the loop was held), the longest garbage collection in that time, and the wall time until the change was committed:
- `fence_one`: broker 1's session expires (brokers 2 and 3 heartbeat), until it is fenced;
- `rejoin`: broker 1 heartbeats again (unfenced), then the leaders propose it back into every ISR, one
  AlterPartition of at most 200 partitions at a time each (as brokers send them), until every ISR is full;
- `fence_all`: every broker's session expires at once, until all three are fenced;
- `follower_replay`: a follower controller replays every record the active one committed in these scenarios.
Only the controller's public shell is used (`submit`, `state`), so the same script measures any tree.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from minikafka.common.clock import monotonic_ms
from minikafka.common.config import load_config
from minikafka.common.event_log import configure_event_log
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.control.requests import (
    AlterPartitionPartition,
    AlterPartitionRequest,
    AlterPartitionTopic,
    BrokerHeartbeatRequest,
    BrokerRegistrationRequest,
    BrokerState,
    CreatableTopic,
    CreateTopicsRequest,
)
from minikafka.kraft_controller.metadata.records import BrokerStatus, Endpoint
from minikafka.kraft_controller.quorum_controller import QuorumController
from minikafka.kraft_controller.raft.messages import LogEntry

CONFIG = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "PLAINTEXT://127.0.0.1:1",
    "controller.quorum.voters": "1@127.0.0.1:1",
    "log.dirs": "/nonexistent",  # never opened: the Raft log is the fake below
    "broker.session.timeout.ms": "3000",  # shorter than the default 9 s, so an expiry costs less of the run
    "broker.heartbeat.interval.ms": "500",
}
HEARTBEAT_INTERVAL_S = 0.5
BROKERS = (1, 2, 3)
PARTITIONS_PER_TOPIC = 5_000  # under Kafka's 10,000 records an operation
ALTER_PARTITION_BATCH = 200  # partitions a broker puts in one AlterPartition


class AutoCommitRaft:
    """Appends on propose; commits in the loop turn after (a quorum answers later, never inside propose)."""

    node_id = 1

    def __init__(self) -> None:
        self.entries: list[LogEntry] = [LogEntry(0, 1, b"", control=True)]  # the epoch-start entry
        self.controller: QuorumController | None = None
        self.high_watermark = 0

    def leader(self) -> tuple[int | None, int]:
        return 1, 1

    def log_end_offset(self) -> int:
        return len(self.entries)

    async def propose(self, entries: Sequence[bytes]) -> int:
        base = len(self.entries)
        self.entries += [LogEntry(base + i, 1, data) for i, data in enumerate(entries)]
        asyncio.get_running_loop().call_soon(self.commit, len(self.entries))
        return base

    def commit(self, high_watermark: int) -> None:
        assert self.controller is not None
        data = [e for e in self.entries[self.high_watermark : high_watermark] if not e.control]
        if data:
            self.controller.handle_commit(data)
        self.high_watermark = max(self.high_watermark, high_watermark)
        self.controller.handle_high_watermark(self.high_watermark)

    def take_snapshot(self, end_offset: int, data: bytes) -> None:
        pass


class LoopWatch:
    """The longest gap between two turns of a coroutine that only yields, and the longest garbage collection
    meanwhile (a full one walks every object of the images held)."""

    def __init__(self) -> None:
        self.longest_s = 0.0
        self.longest_gc_s = 0.0
        self._gc_started = 0.0
        self._task: asyncio.Task[None] | None = None

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.longest_gc_s = max(self.longest_gc_s, time.perf_counter() - self._gc_started)

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0)
            now = time.perf_counter()
            self.longest_s = max(self.longest_s, now - last)
            last = now

    def __enter__(self) -> LoopWatch:
        self._task = asyncio.ensure_future(self._run())
        gc.callbacks.append(self._on_gc)
        return self

    def __exit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        gc.callbacks.remove(self._on_gc)


@dataclass
class Cluster:
    controller: QuorumController
    raft: AutoCommitRaft
    epochs: dict[int, int]

    async def heartbeat(self, broker_id: int, **flags: Any) -> Any:
        beat = BrokerHeartbeatRequest(broker_id, self.epochs[broker_id], 10**9, **flags)
        now = monotonic_ms()
        return await self.controller.submit(lambda: self.controller.state.broker_heartbeat(beat, now))

    async def keep_alive(self, brokers: Sequence[int]) -> None:
        """Heartbeats from `brokers` every interval, one at a time each, as brokers send them."""

        async def beat(broker_id: int) -> None:
            while True:
                await self.heartbeat(broker_id)
                await asyncio.sleep(HEARTBEAT_INTERVAL_S)

        await asyncio.gather(*(beat(b) for b in brokers))


async def wait_until(condition: Callable[[], bool], timeout_s: float = 120) -> None:
    deadline = time.perf_counter() + timeout_s
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.01)


async def start_cluster(partitions: int) -> Cluster:
    raft = AutoCommitRaft()
    controller = QuorumController(load_config(ControllerConfig, CONFIG), raft, clock=monotonic_ms)
    raft.controller = controller
    controller.handle_leader_change(1, 1, 0)
    raft.commit(1)
    controller.start()
    cluster = Cluster(controller, raft, {})
    for broker_id in BROKERS:
        request = BrokerRegistrationRequest(broker_id, f"incarnation-{broker_id}", (Endpoint("PLAINTEXT", "h", 1),))
        registered = await controller.submit(lambda r=request: controller.state.register_broker(r, monotonic_ms()))  # type: ignore[misc]
        cluster.epochs[broker_id] = registered.broker_epoch
        await cluster.heartbeat(broker_id)
    for first in range(0, partitions, PARTITIONS_PER_TOPIC):
        count = min(PARTITIONS_PER_TOPIC, partitions - first)
        creation = CreateTopicsRequest((CreatableTopic(f"scale-{first}", num_partitions=count, replication_factor=3),))
        await controller.submit(lambda c=creation: controller.state.create_topics(c))  # type: ignore[misc]
    return cluster


def status(cluster: Cluster, broker_id: int) -> BrokerStatus:
    registration = cluster.controller.state.committed.broker(broker_id)
    assert registration is not None
    return registration.status


async def timed(work: Callable[[], Awaitable[None]]) -> dict[str, float]:
    with LoopWatch() as watch:
        started = time.perf_counter()
        await work()
        elapsed = time.perf_counter() - started
    return {
        "longest_hold_ms": round(watch.longest_s * 1000, 1),
        "longest_gc_ms": round(watch.longest_gc_s * 1000, 1),
        "wall_s": round(elapsed, 2),
    }


async def fence_one(cluster: Cluster) -> None:
    """Broker 1 goes silent; 2 and 3 keep heartbeating."""
    alive = asyncio.ensure_future(cluster.keep_alive((2, 3)))
    try:
        await wait_until(lambda: status(cluster, 1) is BrokerStatus.FENCED)
    finally:
        alive.cancel()


def isr_incomplete(cluster: Cluster) -> list[tuple[Any, int, Any]]:
    image = cluster.controller.state.committed
    return [(t, i, p) for t, i, p in image.partitions() if len(p.isr) < len(p.replicas)]


async def rejoin(cluster: Cluster) -> None:
    """Broker 1 unfenced by a heartbeat, then each leader proposes it back into its ISRs, a batch at a time."""
    alive = asyncio.ensure_future(cluster.keep_alive(BROKERS))
    try:
        await wait_until(lambda: status(cluster, 1) is BrokerStatus.UNFENCED)
        await rejoin_isrs(cluster)
    finally:
        alive.cancel()


async def rejoin_isrs(cluster: Cluster) -> None:

    async def leader_proposes(leader: int) -> None:
        while True:
            mine = [(t, i, p) for t, i, p in isr_incomplete(cluster) if p.leader == leader][:ALTER_PARTITION_BATCH]
            if not mine:
                return
            by_topic: dict[Any, list[AlterPartitionPartition]] = {}
            for topic, index, p in mine:
                isr = tuple(BrokerState(b, cluster.epochs[b]) for b in p.replicas)
                by_topic.setdefault(topic.topic_id, []).append(
                    AlterPartitionPartition(index, p.leader_epoch, isr, p.partition_epoch)
                )
            topics = tuple(AlterPartitionTopic(tid, tuple(parts)) for tid, parts in by_topic.items())
            request = AlterPartitionRequest(leader, cluster.epochs[leader], topics)
            await cluster.controller.submit(lambda r=request: cluster.controller.state.alter_partition(r))  # type: ignore[misc]

    await asyncio.gather(*(leader_proposes(leader) for leader in (2, 3)))
    await wait_until(lambda: not isr_incomplete(cluster))


async def fence_all(cluster: Cluster) -> None:
    """Every broker goes silent."""
    await wait_until(lambda: all(status(cluster, b) is BrokerStatus.FENCED for b in BROKERS))


async def follower_replay(cluster: Cluster) -> None:
    raft = AutoCommitRaft()
    follower = QuorumController(load_config(ControllerConfig, CONFIG), raft, clock=lambda: 0)
    follower.handle_leader_change(1, 2, 0)  # another node leads: this one only replays
    data = [e for e in cluster.raft.entries if not e.control]
    follower.handle_commit(data)
    await wait_until(lambda: follower.replayed_offset >= data[-1].offset)


async def one_round(partitions: int) -> dict[str, dict[str, float]]:
    cluster = await start_cluster(partitions)
    try:
        results = {"fence_one": await timed(lambda: fence_one(cluster))}
        results["rejoin"] = await timed(lambda: rejoin(cluster))
        results["fence_all"] = await timed(lambda: fence_all(cluster))
        results["follower_replay"] = await timed(lambda: follower_replay(cluster))
        return results
    finally:
        await cluster.controller.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as events_dir:  # the events written as a node writes them
        configure_event_log("controller-1", Path(events_dir), console=False)
        run(args)


def run(args: argparse.Namespace) -> None:
    rounds = [asyncio.run(one_round(args.partitions)) for _ in range(args.rounds)]
    for scenario in rounds[0]:
        holds = [r[scenario]["longest_hold_ms"] for r in rounds]
        walls = [r[scenario]["wall_s"] for r in rounds]
        collections = [r[scenario]["longest_gc_ms"] for r in rounds]
        print(
            json.dumps(
                {
                    "scenario": scenario,
                    "partitions": args.partitions,
                    "longest_hold_ms": holds,
                    "wall_s": walls,
                    "longest_gc_ms": collections,
                    "median_hold_ms": statistics.median(holds),
                }
            )
        )


if __name__ == "__main__":
    main()
