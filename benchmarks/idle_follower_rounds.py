"""A follower's CPU per idle fetch round (one fetcher's incremental Fetch that brings nothing), in-process, paired
between two trees.

    git worktree add --detach /tmp/parent <commit>
    .venv/bin/python benchmarks/idle_follower_rounds.py --old /tmp/parent [--new .] [--partitions 1000,10000]
        [--rounds 3] [--out benchmarks/idle_follower_rounds.json]

Each measurement is a child process running one tree's code (`PYTHONPATH=<tree>/src`): a ReplicaManager on broker 1
holding `--partitions` replicas (10 topics, RF 3 on brokers 0-2, leaders spread evenly, so it leads a third and
follows a third from each of brokers 0 and 2, as each broker of a 3-broker cluster does), and the real fetcher for
leader 0 (`fetcher.run_fetcher`) talking to a fake leader stream: its full Fetch opens a session, a few idle rounds
warm up, then `--fetches` idle rounds are timed with the process's CPU clock. The fake leader answers each Fetch at
once with an empty incremental answer (decoded as the gRPC deserializer does), so what is measured is the follower's
round: collecting the fetch states, the session handler's build and answer handling, the request message, the
answer's decoding and the loop; not the network, gRPC's own work or the leader's side (idle_follower_fetch.py).
A broker in a 3-broker cluster runs two such fetchers, each one round per replica.fetch.wait.max.ms (500 ms)
while idle. The logs are in-memory stand-ins (a fetch state reads three of their fields). The rounds alternate the
trees, so the shared machine's drift falls on both; the figure is each round's new/old ratio and their median.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from paired_children import PairedBenchmark, paired_main

HERE = Path(__file__).resolve().parent
TOPICS = 10
BROKERS = (0, 1, 2)
FOLLOWER = 1
LEADER = 0
WARM_UP = 5
SESSION = 42


class IdleLog:
    """What a follower's fetch state reads of a PartitionLog."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.high_watermark = 0
        self.latest_epoch = -1
        self.offline = False


def follower_of(partitions: int) -> Any:
    """A ReplicaManager on broker 1 holding every partition, leading those of index % 3 == 1."""
    from minikafka.broker.log_manager import TopicPartition
    from minikafka.broker.produce_purgatory import ProducePurgatory
    from minikafka.broker.replica.partition import PartitionConfig, PartitionMetadata, make_follower, make_leader
    from minikafka.broker.replica_manager import Replica, ReplicaManager

    config = SimpleNamespace(
        node_id=FOLLOWER,
        replica_lag_time_max_ms=30_000,
        inter_node_tls=None,
        replica_fetch_backoff_ms=1000,
        replica_fetch_wait_max_ms=500,
        request_timeout_ms=30_000,
        replica_fetch_min_bytes=1,
        replica_fetch_response_max_bytes=10 << 20,
        replica_fetch_max_bytes=1 << 20,
    )
    manager = ReplicaManager(config, None, SimpleNamespace(image=None), None, lambda: 10, lambda: True)  # type: ignore[arg-type]
    topic_ids = [uuid.uuid4() for _ in range(TOPICS)]
    for number in range(partitions):
        tp = TopicPartition(f"t{number % TOPICS}", number // TOPICS)
        leader = BROKERS[number % len(BROKERS)]
        metadata = PartitionMetadata(BROKERS, BROKERS, leader, 1, 1)
        if leader == FOLLOWER:
            role = make_leader(str(tp), FOLLOWER, 10, metadata, 0, 0, PartitionConfig(2, 30000), 0).state
        else:
            role = make_follower(str(tp), FOLLOWER, metadata, 0, 0).state
        log = IdleLog(str(tp))
        replica = Replica(tp, topic_ids[number % TOPICS], log, role, ProducePurgatory(str(tp)))  # type: ignore[arg-type]
        manager.replicas[tp] = replica
    return manager


class FakeLeader:
    """Leader 0's FetchStream: answers every Fetch at once, empty, in session SESSION; times the idle rounds."""

    def __init__(self, timed: int) -> None:
        from minikafka.pb import broker_pb2

        self.answer = broker_pb2.FetchResponse(session_id=SESSION).SerializeToString()
        self.timed = timed
        self.fetches = 0
        self.listed = 0  # partitions listed by the timed Fetches (an idle round lists none)
        self.start = 0.0
        self.spent: asyncio.Future[float] = asyncio.get_running_loop().create_future()

    def open(self) -> FakeLeader:
        return self

    async def write(self, request: Any) -> None:
        self.fetches += 1
        if self.fetches == WARM_UP + 2:  # the full Fetch and the warm-up rounds are done
            self.start = time.process_time()
        elif self.fetches > WARM_UP + 2:
            self.listed += sum(len(topic.partitions) for topic in request.topics)
        if self.fetches == WARM_UP + 2 + self.timed:
            self.spent.set_result(time.process_time() - self.start)
            await asyncio.Event().wait()  # the measurement is over: the fetcher waits here until cancelled

    async def read(self) -> Any:
        from minikafka.common.fetch_response_wire import decode_fetch_response

        return decode_fetch_response(self.answer)

    def cancel(self) -> None:
        pass


async def measure_child(partitions: int, fetches: int) -> dict[str, Any]:
    import structlog

    from minikafka.broker import fetcher

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    manager = follower_of(partitions)
    leader = FakeLeader(fetches)
    manager.leader_address = lambda leader_id: str(leader_id)
    fetcher.PeerChannels.get = lambda _self, address: address  # type: ignore[method-assign,assignment]
    fetcher.fetch_stream = lambda address: leader.open  # type: ignore[assignment]
    task = asyncio.create_task(fetcher.run_fetcher(manager, LEADER))
    spent = await leader.spent
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    per_round = spent / fetches * 1e6
    return {"partitions": partitions, "fetches": fetches, "us_per_round": per_round, "listed": leader.listed}


BENCHMARK = PairedBenchmark(
    __file__,
    __doc__.split("\n\n")[0],
    "partitions in the cluster",
    "idle rounds timed",
    total=200_000,
    minimum=50,
    figure="us_per_round",
    out=HERE / "idle_follower_rounds.json",
    also="listed",
)


if __name__ == "__main__":
    paired_main(BENCHMARK, measure_child)
