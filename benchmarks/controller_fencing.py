"""How long the active controller's event loop is held, how much CPU it spends and how long a live broker's
heartbeat waits for its answer while it fences, unfences and takes back into the ISRs a broker that is a replica of N
partitions (RF 3): in-process, with a fake Raft that commits each append a loop turn later, so what is measured is
the controller's own generation, application, encoding and replay (and a follower controller's replay of the same
records), paired between two trees.

    git worktree add --detach /tmp/parent <commit>      # or any checkout, e.g. /work/main
    .venv/bin/python benchmarks/controller_fencing.py --old /tmp/parent [--new .] [--partitions 20000]
        [--brokers 3] [--scenarios fence_one,rejoin] [--rounds 3] [--out benchmarks/controller_fencing.json]
    .venv/bin/python benchmarks/controller_fencing.py --child --partitions 20000 --profile   # one tree, cProfile

Each measurement is a child process running one tree's code (`PYTHONPATH=<tree>/src`), the trees alternating round
by round. Per scenario it reports the longest gap between two turns of a coroutine that does nothing but yield (the
longest the loop was held), the longest garbage collection in that time, the wall and CPU time until the change was
committed, the records written, and the latencies of the live brokers' heartbeats meanwhile (each sent every
500 ms, one at a time, through the controller's service as a broker's call reaches it, with Kafka's default
heartbeat interval of 2 s: one the event queue reaches more than 1 s late is answered REQUEST_TIMED_OUT, counted):
- `fence_one`: broker 1's session expires (the others heartbeat), until it is fenced;
- `rejoin`: broker 1 heartbeats again (unfenced), then the leaders propose it back into every ISR, one
  AlterPartition of at most 200 partitions at a time each (as brokers send them), until every ISR is full;
- `fence_all`: every broker's session expires at once, until all are fenced;
- `follower_replay`: a follower controller replays every record the active one committed in these scenarios.
Only the controller's public shell is used (`submit`, `state`), so the same script measures any tree.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paired_children import run_child

HERE = Path(__file__).resolve().parent
HEARTBEAT_INTERVAL_S = 0.5
PARTITIONS_PER_TOPIC = 5_000  # under Kafka's 10,000 records an operation
ALTER_PARTITION_BATCH = 200  # partitions a broker puts in one AlterPartition
SCENARIOS = ("fence_one", "rejoin", "fence_all", "follower_replay")
# The figures compared between the trees (new/old); the others are shown as they are.
RATIO_FIGURES = ("cpu_s", "longest_hold_cpu_ms", "longest_hold_ms", "heartbeat_max_ms")
CONFIG = {
    "node.id": "1",
    "process.roles": "controller",
    "listeners": "PLAINTEXT://127.0.0.1:1",
    "controller.quorum.voters": "1@127.0.0.1:1",
    "log.dirs": "/nonexistent",  # never opened: the Raft log is the fake below
    "broker.session.timeout.ms": "3000",  # shorter than the default 9 s, so an expiry costs less of the run
    "broker.heartbeat.interval.ms": "2000",  # Kafka's default: a heartbeat must start within 1 s in the queue
}


def child_imports() -> Any:
    """The tree's modules, imported only in a child (its PYTHONPATH names the tree)."""
    from types import SimpleNamespace

    from minikafka.common.clock import monotonic_ms
    from minikafka.common.config import load_config
    from minikafka.common.errors import ErrorCode, KafkaError
    from minikafka.common.event_log import configure_event_log
    from minikafka.kraft_controller.config import ControllerConfig
    from minikafka.kraft_controller.control import requests
    from minikafka.kraft_controller.metadata.records import BrokerStatus, Endpoint
    from minikafka.kraft_controller.quorum_controller import QuorumController
    from minikafka.kraft_controller.raft.messages import LogEntry
    from minikafka.kraft_controller.service import ControllerService
    from minikafka.pb import controller_pb2

    return SimpleNamespace(
        monotonic_ms=monotonic_ms,
        config=lambda: load_config(ControllerConfig, CONFIG),
        ErrorCode=ErrorCode,
        KafkaError=KafkaError,
        configure_event_log=configure_event_log,
        rq=requests,
        BrokerStatus=BrokerStatus,
        Endpoint=Endpoint,
        QuorumController=QuorumController,
        LogEntry=LogEntry,
        ControllerService=ControllerService,
        pb=controller_pb2,
    )


class AutoCommitRaft:
    """Appends on propose; commits in the loop turn after (a quorum answers later, never inside propose)."""

    node_id = 1

    def __init__(self) -> None:
        self.entries: list[Any] = [M.LogEntry(0, 1, b"", control=True)]  # the epoch-start entry
        self.controller: Any = None
        self.high_watermark = 0

    def leader(self) -> tuple[int | None, int]:
        return 1, 1

    def log_end_offset(self) -> int:
        return len(self.entries)

    async def propose(self, entries: Sequence[bytes]) -> int:
        base = len(self.entries)
        self.entries += [M.LogEntry(base + i, 1, data) for i, data in enumerate(entries)]
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
        self.longest_cpu_s = 0.0  # the CPU time of that turn: what a loaded machine does not stretch
        self.longest_gc_s = 0.0
        self._gc_started = 0.0
        self._task: asyncio.Task[None] | None = None

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.longest_gc_s = max(self.longest_gc_s, time.perf_counter() - self._gc_started)

    async def _run(self) -> None:
        last, last_cpu = time.perf_counter(), time.process_time()
        while True:
            await asyncio.sleep(0)
            now, cpu = time.perf_counter(), time.process_time()
            self.longest_s = max(self.longest_s, now - last)
            self.longest_cpu_s = max(self.longest_cpu_s, cpu - last_cpu)
            last, last_cpu = now, cpu

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
    controller: Any
    service: Any
    raft: AutoCommitRaft
    brokers: tuple[int, ...]
    epochs: dict[int, int]
    latencies_ms: list[float] = field(default_factory=list)  # of the heartbeats answered since the last reset
    timed_out: int = 0  # heartbeats answered REQUEST_TIMED_OUT (the queue reached them past their deadline)

    async def heartbeat(self, broker_id: int) -> Any:
        """One heartbeat through the controller's service, as a broker's call reaches it."""
        beat = M.pb.BrokerHeartbeatRequest(
            broker_id=broker_id, broker_epoch=self.epochs[broker_id], current_metadata_offset=10**9
        )
        started = time.perf_counter()
        response = await self.service.BrokerHeartbeat(beat, None)
        self.latencies_ms.append((time.perf_counter() - started) * 1000)
        if response.error_code == M.ErrorCode.REQUEST_TIMED_OUT:
            self.timed_out += 1
        elif response.error_code:
            raise RuntimeError(f"heartbeat of broker {broker_id}: {response}")
        return response

    async def keep_alive(self, brokers: Sequence[int]) -> None:
        """Heartbeats from `brokers` every interval, one at a time each, as brokers send them."""

        async def beat(broker_id: int) -> None:
            while True:
                await self.heartbeat(broker_id)
                await asyncio.sleep(HEARTBEAT_INTERVAL_S)

        await asyncio.gather(*(beat(b) for b in brokers))


M: Any = None  # the child's imports of its tree


async def wait_until(condition: Callable[[], bool], timeout_s: float = 300) -> None:
    deadline = time.perf_counter() + timeout_s
    while not condition():
        if time.perf_counter() > deadline:
            raise TimeoutError("condition not reached")
        await asyncio.sleep(0.01)


async def start_cluster(partitions: int, brokers: int) -> Cluster:
    raft = AutoCommitRaft()
    controller = M.QuorumController(M.config(), raft, clock=M.monotonic_ms)
    raft.controller = controller
    controller.handle_leader_change(1, 1, 0)
    raft.commit(1)
    controller.start()
    service = M.ControllerService(controller, {}, lambda: None, "bench")
    cluster = Cluster(controller, service, raft, tuple(range(1, brokers + 1)), {})
    for broker_id in cluster.brokers:
        request = M.rq.BrokerRegistrationRequest(
            broker_id, f"incarnation-{broker_id}", (M.Endpoint("PLAINTEXT", "h", 1),)
        )
        registered = await controller.submit(lambda r=request: controller.state.register_broker(r, M.monotonic_ms()))
        cluster.epochs[broker_id] = registered.broker_epoch
        await cluster.heartbeat(broker_id)
    alive = asyncio.ensure_future(cluster.keep_alive(cluster.brokers))  # no session may expire while creating
    try:
        for first in range(0, partitions, PARTITIONS_PER_TOPIC):
            count = min(PARTITIONS_PER_TOPIC, partitions - first)
            creation = M.rq.CreateTopicsRequest(
                (M.rq.CreatableTopic(f"scale-{first}", num_partitions=count, replication_factor=3),)
            )
            await controller.submit(lambda c=creation: controller.state.create_topics(c))
        await wait_until(lambda: controller.replayed_offset >= len(raft.entries) - 1)
    finally:
        alive.cancel()
    assert all(status(cluster, b) is M.BrokerStatus.UNFENCED for b in cluster.brokers), "a session expired"
    return cluster


def status(cluster: Cluster, broker_id: int) -> Any:
    registration = cluster.controller.state.committed.broker(broker_id)
    assert registration is not None
    return registration.status


async def timed(cluster: Cluster, work: Callable[[], Awaitable[None]]) -> dict[str, float]:
    cluster.latencies_ms, cluster.timed_out = [], 0
    entries = len(cluster.raft.entries)
    with LoopWatch() as watch:
        started, cpu = time.perf_counter(), time.process_time()
        await work()
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    latencies = cluster.latencies_ms or [0.0]
    return {
        "longest_hold_ms": round(watch.longest_s * 1000, 1),
        "longest_hold_cpu_ms": round(watch.longest_cpu_s * 1000, 1),
        "longest_gc_ms": round(watch.longest_gc_s * 1000, 1),
        "wall_s": round(elapsed, 2),
        "cpu_s": round(cpu, 3),
        "records": len(cluster.raft.entries) - entries,
        "heartbeats": len(cluster.latencies_ms),
        "heartbeat_p50_ms": round(statistics.median(latencies), 1),
        "heartbeat_max_ms": round(max(latencies), 1),
        "heartbeats_timed_out": cluster.timed_out,
    }


async def fence_one(cluster: Cluster) -> None:
    """Broker 1 goes silent; the others keep heartbeating."""
    alive = asyncio.ensure_future(cluster.keep_alive(cluster.brokers[1:]))
    try:
        await wait_until(lambda: status(cluster, 1) is M.BrokerStatus.FENCED)
        await wait_until(lambda: cluster.controller.replayed_offset >= len(cluster.raft.entries) - 1)
    finally:
        alive.cancel()


def isr_incomplete(cluster: Cluster) -> list[tuple[Any, int, Any]]:
    image = cluster.controller.state.committed
    return [(t, i, p) for t, i, p in image.partitions() if len(p.isr) < len(p.replicas)]


async def rejoin(cluster: Cluster) -> None:
    """Broker 1 unfenced by a heartbeat, then each leader proposes it back into its ISRs, a batch at a time."""
    alive = asyncio.ensure_future(cluster.keep_alive(cluster.brokers))
    try:
        await wait_until(lambda: status(cluster, 1) is M.BrokerStatus.UNFENCED)
        await rejoin_isrs(cluster)
    finally:
        alive.cancel()


async def rejoin_isrs(cluster: Cluster) -> None:
    # What each leader would propose, taken once (a leader knows its own partitions; a scan per batch here would
    # be the benchmark's cost, not the controller's).
    pending: dict[int, list[tuple[Any, int]]] = {}
    for topic, index, p in isr_incomplete(cluster):
        pending.setdefault(p.leader, []).append((topic.topic_id, index))

    async def leader_proposes(leader: int, partitions: list[tuple[Any, int]]) -> None:
        for start in range(0, len(partitions), ALTER_PARTITION_BATCH):
            image = cluster.controller.state.committed
            by_topic: dict[Any, list[Any]] = {}
            for topic_id, index in partitions[start : start + ALTER_PARTITION_BATCH]:
                p = image.partition(topic_id, index)
                isr = tuple(M.rq.BrokerState(b, cluster.epochs[b]) for b in p.replicas)
                by_topic.setdefault(topic_id, []).append(
                    M.rq.AlterPartitionPartition(index, p.leader_epoch, isr, p.partition_epoch)
                )
            topics = tuple(M.rq.AlterPartitionTopic(tid, tuple(parts)) for tid, parts in by_topic.items())
            request = M.rq.AlterPartitionRequest(leader, cluster.epochs[leader], topics)
            await cluster.controller.submit(lambda r=request: cluster.controller.state.alter_partition(r))

    await asyncio.gather(*(leader_proposes(leader, parts) for leader, parts in pending.items()))
    assert not isr_incomplete(cluster), "every AlterPartition was answered, committed"


async def fence_all(cluster: Cluster) -> None:
    """Every broker goes silent."""
    await wait_until(lambda: all(status(cluster, b) is M.BrokerStatus.FENCED for b in cluster.brokers))


async def follower_replay(cluster: Cluster) -> None:
    raft = AutoCommitRaft()
    follower = M.QuorumController(M.config(), raft, clock=lambda: 0)
    follower.handle_leader_change(1, 2, 0)  # another node leads: this one only replays
    data = [e for e in cluster.raft.entries if not e.control]
    follower.handle_commit(data)
    await wait_until(lambda: follower.replayed_offset >= data[-1].offset)


async def one_round(partitions: int, brokers: int, scenarios: Sequence[str], profile: bool) -> dict[str, Any]:
    cluster = await start_cluster(partitions, brokers)
    work = {"fence_one": fence_one, "rejoin": rejoin, "fence_all": fence_all, "follower_replay": follower_replay}
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    try:
        return {name: await timed(cluster, lambda w=work[name]: w(cluster)) for name in scenarios}  # type: ignore[misc]
    finally:
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats("/tmp/controller_fencing.prof")
        await cluster.controller.stop()


def measure_child(args: argparse.Namespace) -> dict[str, Any]:
    global M
    M = child_imports()
    with tempfile.TemporaryDirectory() as events_dir:  # the events written as a node writes them
        M.configure_event_log("controller-1", Path(events_dir), console=False)
        scenarios = args.scenarios.split(",")
        return asyncio.run(one_round(int(args.partitions), args.brokers, scenarios, args.profile))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", type=Path, help="a checkout (its src/ is used)")
    parser.add_argument("--new", type=Path, default=HERE.parent)
    parser.add_argument("--partitions", default="20000", help="partitions in the cluster, comma-separated")
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--scenarios", default="fence_one,rejoin", help=f"of {','.join(SCENARIOS)}")
    parser.add_argument("--fetches", type=int, default=0, help=argparse.SUPPRESS)  # the paired harness passes it
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "controller_fencing.json"))
    parser.add_argument("--child", action="store_true", help="measure this interpreter's tree once")
    parser.add_argument("--profile", action="store_true", help="with --child: cProfile to /tmp/controller_fencing.prof")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure_child(args)))
        return
    if args.old is None:
        parser.error("--old is required")
    extra = ["--brokers", str(args.brokers), "--scenarios", args.scenarios]
    results: dict[str, Any] = {}
    for size in [int(size) for size in args.partitions.split(",")]:
        results[str(size)] = paired_size(args, size, extra)
    results["load_average"] = os.getloadavg()
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


def paired_size(args: argparse.Namespace, size: int, extra: list[str]) -> dict[str, Any]:
    """`args.rounds` rounds of one child per tree, alternating who goes first; each scenario's figures, their
    new/old ratios, and the median ratios."""
    trees = {"old": args.old, "new": args.new}
    rounds = []
    for number in range(args.rounds):
        order = ("old", "new") if number % 2 == 0 else ("new", "old")
        measured = {name: run_child(__file__, trees[name], size, 0, extra) for name in order}
        entry: dict[str, Any] = {"load_average": os.getloadavg()[0]}
        for scenario, new in measured["new"].items():
            old = measured["old"][scenario]
            ratios = {f"{k}_ratio": round(new[k] / old[k], 4) if old[k] else None for k in RATIO_FIGURES}
            entry[scenario] = {"old": old, "new": new, **ratios}
            print(f"{size} partitions, round {number + 1}, {scenario}: " + json.dumps(entry[scenario]), flush=True)
        rounds.append(entry)
    medians = {
        scenario: {
            f"median_{k}_ratio": statistics.median(r[scenario][f"{k}_ratio"] or 0.0 for r in rounds)
            for k in RATIO_FIGURES
        }
        for scenario in measured["new"]
    }
    print(f"{size} partitions: " + json.dumps(medians), flush=True)
    return {"rounds": rounds, "medians": medians}


if __name__ == "__main__":
    main()
