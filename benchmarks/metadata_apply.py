"""A broker's cost of applying big metadata deltas (a peer's controlled shutdown and its rejoin), in-process, paired
between two trees.

    git worktree add --detach /tmp/parent <commit>
    .venv/bin/python benchmarks/metadata_apply.py --old /tmp/parent [--new .] [--partitions 3000]
        [--rounds 3] [--out benchmarks/metadata_apply.json]
    .venv/bin/python benchmarks/metadata_apply.py --child --partitions 3000 --profile   # cProfile of one tree

Each measurement is a child process running one tree's code (`PYTHONPATH=<tree>/src`): broker 2's ReplicaManager
in a cluster of brokers 1-3 holding `--partitions` partitions (10 topics, RF 3, leaders spread evenly, so it leads a
third), its logs real files in a temporary directory. Brokers 1 and 3 each keep one follower Fetch session open on
it, long-polling as a follower's fetcher does (an incremental Fetch of nothing new, 500 ms wait) through the real
Fetch handler. Once every replica is taken on and the sessions are idle, three deltas are applied, as the replica
manager gets them from the metadata listener, one after the other, each until the broker reports it applied:
broker 1's controlled shutdown (out of every ISR, its leaderships moved to the next replica), its rejoin (back in
every ISR) and the preferred leader election (its leaderships back). The figure is the wall time of the three over
the partition changes they carry (N + N + N/3), with the process's CPU time, the follower Fetches the leader
answered and the partitions they read meanwhile, and the longest late wake-up of a 10 ms ticker (the heartbeat's
stand-in: how long one loop turn held the loop). The followers here stay up through the three deltas (in a real
shutdown broker 1 is down in between): so broker 1 is a follower out of the ISR, its partitions unsettled, from the
first delta until the second, as a rejoining broker is until its ISR expansions are committed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from paired_children import run_child

HERE = Path(__file__).resolve().parent
TOPICS = 10
BROKERS = (1, 2, 3)
ME = 2
AWAY = 1
FOLLOWER_WAIT_MS = 500
FIGURES = ("us_per_change", "cpu_us_per_change", "follower_reads", "longest_gap_ms")


def child_imports() -> Any:
    """The tree's modules, imported only in a child (its PYTHONPATH names the tree)."""
    from minikafka.broker.fetch_session import FetchSessionCache, PartitionFetchState
    from minikafka.broker.log_manager import LogManager
    from minikafka.broker.metadata_listener import MetadataDelta
    from minikafka.broker.replica_manager import ReplicaManager
    from minikafka.broker.requests.fetch import FetchRequest, handle_fetch
    from minikafka.common.event_log import configure_event_log
    from minikafka.kraft_controller.metadata.image import MetadataImage
    from minikafka.kraft_controller.metadata.records import (
        Partition,
        PartitionChange,
        RegisterBroker,
        Topic,
        UnfenceBroker,
    )
    from minikafka.storage.log_config import LogConfig

    return SimpleNamespace(
        FetchSessionCache=FetchSessionCache,
        PartitionFetchState=PartitionFetchState,
        LogManager=LogManager,
        MetadataDelta=MetadataDelta,
        ReplicaManager=ReplicaManager,
        FetchRequest=FetchRequest,
        handle_fetch=handle_fetch,
        configure_event_log=configure_event_log,
        MetadataImage=MetadataImage,
        Partition=Partition,
        PartitionChange=PartitionChange,
        RegisterBroker=RegisterBroker,
        Topic=Topic,
        UnfenceBroker=UnfenceBroker,
        LogConfig=LogConfig,
    )


class SilentController:
    """No controller answers (the AlterPartitions a leader sends are not what is measured)."""

    async def call(self, method: str, request: Any, *args: Any, **kwargs: Any) -> None:
        await asyncio.sleep(1.0)


class Cluster:
    """The metadata the tested broker sees, and its replica manager."""

    def __init__(self, m: Any, partitions: int, directory: Path) -> None:
        self.m = m
        image = m.MetadataImage()
        for broker in BROKERS:
            image = self._replay(image, m.RegisterBroker(broker, f"b{broker}"))
        for broker in BROKERS:
            image = self._replay(image, m.UnfenceBroker(broker, image.brokers[broker].broker_epoch))
        self.epochs = {broker: image.brokers[broker].broker_epoch for broker in BROKERS}
        self.assignments: list[tuple[uuid.UUID, int, tuple[int, ...]]] = []
        per_topic = partitions // TOPICS
        for number in range(TOPICS):
            topic_id = uuid.UUID(int=number + 1)
            image = self._replay(image, m.Topic(f"t{number}", topic_id))
            for index in range(per_topic):
                start = (number * per_topic + index) % len(BROKERS)
                replicas = BROKERS[start:] + BROKERS[:start]
                image = self._replay(image, m.Partition(topic_id, index, replicas, replicas, replicas[0]))
                self.assignments.append((topic_id, index, replicas))
        self.metadata = SimpleNamespace(image=image, offset=image.offset)
        config = SimpleNamespace(
            node_id=ME,
            min_insync_replicas=2,
            replica_lag_time_max_ms=30000,
            set_keys=frozenset(),
            replica_fetch_max_bytes=1048576,
            inter_broker_listener="REPLICATION",
        )
        logs = m.LogManager(directory / "data", lambda topic: m.LogConfig())
        controller = SilentController()
        self.manager = m.ReplicaManager(config, logs, self.metadata, controller, lambda: self.epochs[ME], lambda: True)
        self.manager._ensure_fetcher = lambda leader_id: None  # no peers: the followers here are the fake ones

    @staticmethod
    def _replay(image: Any, record: Any) -> Any:
        return image.replay(record, image.offset + 1)

    def replayed(self, image: Any, records: list[Any]) -> tuple[Any, tuple[tuple[uuid.UUID, int], ...]]:
        """The image after `records` (one delta) and the partitions they change, computed before the timing."""
        for record in records:
            image = self._replay(image, record)
        return image, tuple((record.topic_id, record.partition_id) for record in records)

    async def publish(self, image: Any, changed: tuple[tuple[uuid.UUID, int], ...]) -> None:
        """Hand the replica manager one delta, as the listener does, and wait until it reports it applied."""
        self.metadata.image, self.metadata.offset = image, image.offset
        self.manager.on_metadata(self.m.MetadataDelta(image, changed, image.offset))
        while self.manager.applied_metadata_offset < image.offset:
            await asyncio.sleep(0.001)

    def shutdown_of_away(self) -> list[Any]:
        records = []
        for topic_id, index, replicas in self.assignments:
            isr = tuple(b for b in replicas if b != AWAY)
            leader = replicas[1] if replicas[0] == AWAY else None
            records.append(self.m.PartitionChange(topic_id, index, leader=leader, isr=isr))
        return records

    def rejoin_of_away(self) -> list[Any]:
        return [self.m.PartitionChange(t, i, isr=replicas) for t, i, replicas in self.assignments]

    def preferred_leaders(self) -> list[Any]:
        return [self.m.PartitionChange(t, i, leader=AWAY) for t, i, replicas in self.assignments if replicas[0] == AWAY]


class FakeFollower:
    """A follower's fetcher as the leader sees it: a full Fetch that opens a session, then incremental ones."""

    def __init__(self, cluster: Cluster, replica_id: int) -> None:
        self.cluster = cluster
        self.replica_id = replica_id
        self.sessions = cluster.m.FetchSessionCache(10, lambda: 7)
        self.rounds = 0

    def _request(self, session_id: int, epoch: int, lines: list[Any], wait_ms: int) -> Any:
        return self.cluster.m.FetchRequest(
            self.replica_id, self.cluster.epochs[self.replica_id], wait_ms, 1, 1 << 20, session_id, epoch, lines
        )

    async def open(self) -> None:
        m, manager = self.cluster.m, self.cluster.manager
        lines = [
            m.PartitionFetchState(r.topic_id.bytes, tp.topic, tp.partition, r.leader_epoch, 0, -1, 0, 1 << 20)
            for tp, r in manager.replicas.items()
            if r.leader is not None
        ]
        answer = await m.handle_fetch(manager, self.sessions, self._request(0, 0, lines, 0))
        self.session_id, self.epoch = answer.session_id, 1
        for _ in range(3):  # the session settles: its partitions read as caught up
            await self.fetch(0)

    async def fetch(self, wait_ms: int) -> None:
        m, manager = self.cluster.m, self.cluster.manager
        await m.handle_fetch(manager, self.sessions, self._request(self.session_id, self.epoch, [], wait_ms))
        self.epoch += 1
        self.rounds += 1

    async def run(self) -> None:
        while True:
            await self.fetch(FOLLOWER_WAIT_MS)


async def ticker(gaps: list[float]) -> None:
    """The heartbeat's stand-in: wakes every 10 ms; the longest late wake-up is how long the loop was held."""
    while True:
        before = time.perf_counter()
        await asyncio.sleep(0.01)
        gaps.append(time.perf_counter() - before - 0.01)


async def measure_child(partitions: int, profile: bool) -> dict[str, Any]:
    m = child_imports()
    with tempfile.TemporaryDirectory(prefix="metadata-apply-") as name:
        directory = Path(name)
        # The events are written as a broker writes them: JSON lines to a file, readable lines to its stderr file.
        with (directory / "stderr.log").open("w") as stderr:
            m.configure_event_log("broker-2", directory / "events", "info", stderr=stderr)
            return await measure_in(m, partitions, profile, directory)


async def measure_in(m: Any, partitions: int, profile: bool, directory: Path) -> dict[str, Any]:
    cluster = Cluster(m, partitions, directory)
    every = tuple((t, i) for t, i, _ in cluster.assignments)
    await cluster.publish(cluster.metadata.image, every)
    followers = [FakeFollower(cluster, broker) for broker in BROKERS if broker != ME]
    for follower in followers:
        await follower.open()
    deltas = []
    image = cluster.metadata.image
    for records in (cluster.shutdown_of_away(), cluster.rejoin_of_away(), cluster.preferred_leaders()):
        image, changed = cluster.replayed(image, records)
        deltas.append((image, changed))
    changes = sum(len(changed) for _, changed in deltas)
    tasks = [asyncio.create_task(follower.run()) for follower in followers]
    await asyncio.sleep(0.1)
    for follower in followers:
        follower.rounds = 0
    reads = [0]
    follower_fetch = cluster.manager.follower_fetch

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads[0] += 1
        return follower_fetch(*args, **kwargs)

    cluster.manager.follower_fetch = counted  # the partitions the followers' Fetches read on the leader
    gaps: list[float] = []
    tasks.append(asyncio.create_task(ticker(gaps)))
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    wall, cpu = time.perf_counter(), time.process_time()
    for image, changed in deltas:
        await cluster.publish(image, changed)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats("/tmp/metadata_apply.prof")
    rounds = sum(follower.rounds for follower in followers)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await cluster.manager.stop()
    return {
        "partitions": partitions,
        "changes": changes,
        "us_per_change": wall / changes * 1e6,
        "cpu_us_per_change": cpu / changes * 1e6,
        "follower_rounds": rounds,
        "follower_reads": reads[0],
        "longest_gap_ms": max(gaps, default=0.0) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, help="a checkout (its src/ is used)")
    parser.add_argument("--new", type=Path, default=HERE.parent)
    parser.add_argument("--partitions", default="3000", help="partitions in the cluster, comma-separated")
    parser.add_argument("--fetches", type=int, default=0, help=argparse.SUPPRESS)  # the paired harness passes it
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "metadata_apply.json"))
    parser.add_argument("--child", action="store_true", help="measure this interpreter's tree once")
    parser.add_argument("--profile", action="store_true", help="with --child: cProfile to /tmp/metadata_apply.prof")
    args = parser.parse_args()
    sizes = [int(size) for size in args.partitions.split(",")]
    if args.child:
        print(json.dumps(asyncio.run(measure_child(sizes[0], args.profile))))
        return
    if args.old is None:
        parser.error("--old is required")
    trees = {"old": args.old, "new": args.new}
    results: dict[str, Any] = {}
    for size in sizes:
        rounds = []
        for number in range(args.rounds):
            order = ("old", "new") if number % 2 == 0 else ("new", "old")
            measured = {name: run_child(__file__, trees[name], size, 0) for name in order}
            ratios = {f"{key}_ratio": measured["new"][key] / measured["old"][key] for key in FIGURES}
            rounds.append({**measured, **ratios})
            print(f"{size} partitions, round {number + 1}: " + ", ".join(
                f"{key} old {measured['old'][key]:.1f} new {measured['new'][key]:.1f}" for key in FIGURES
            ), flush=True)  # fmt: skip
        medians = {f"median_{key}_ratio": statistics.median(r[f"{key}_ratio"] for r in rounds) for key in FIGURES}
        results[str(size)] = {"rounds": rounds, **medians}
        print(f"{size} partitions: " + ", ".join(f"{k} {v:.3f}" for k, v in medians.items()), flush=True)
    results["load_average"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
