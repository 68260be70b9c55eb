"""A leader's CPU per idle incremental follower Fetch (KIP-227 sessions), in-process, paired between two trees.

    git worktree add --detach /tmp/parent <commit>
    .venv/bin/python benchmarks/idle_follower_fetch.py --old /tmp/parent [--new .] [--partitions 1000,10000]
        [--rounds 3] [--out benchmarks/idle_follower_fetch.json]

Each measurement is a child process running one tree's code (`PYTHONPATH=<tree>/src`): a ReplicaManager leading
`--partitions` partitions (10 topics, RF 3, ISR 0,1,2, every log empty), follower 1's full Fetch opening a session
over all of them, a few idle incremental Fetches to warm up, then `--fetches` idle incremental Fetches through
`requests.fetch.handle_fetch` (the request layer both front ends call), `max_wait_ms` 0, timed with the process's
CPU clock. The rounds alternate the trees, so the shared machine's drift falls on both; the figure is each round's
new/old ratio and their median. The logs are in-memory stand-ins (an empty log's read at its end is two
comparisons in PartitionLog.read too): what is measured is the request layer, the session cache, the replica
manager and the partition cores, not the disk; the gRPC or Kafka-wire encoding of the (empty) answer is not in it.
"""

from __future__ import annotations

import itertools
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from paired_children import PairedBenchmark, paired_main

HERE = Path(__file__).resolve().parent
TOPICS = 10
FOLLOWER = 1
WARM_UP = 5


class EmptyLog:
    """What a leader's Fetch path asks of an empty PartitionLog."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.log_start_offset = 0
        self.log_end_offset = 0
        self.high_watermark = 0
        self.latest_epoch = -1
        self.offline = False

    def read(self, fetch_offset: int, max_bytes: int, max_offset: int | None = None, first_whole: bool = True) -> bytes:
        if not self.log_start_offset <= fetch_offset <= self.log_end_offset:
            raise ValueError(f"offset {fetch_offset} out of range")
        return b""

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return (-1, -1)


def leader_of(partitions: int) -> tuple[Any, list[Any]]:
    """A ReplicaManager on broker 0 leading `partitions` partitions, and follower 1's full-fetch lines for them."""
    from immutables import Map

    from minikafka.broker.fetch_session import PartitionFetchState
    from minikafka.broker.log_manager import TopicPartition
    from minikafka.broker.produce_purgatory import ProducePurgatory
    from minikafka.broker.replica.partition import PartitionConfig, PartitionMetadata, make_leader
    from minikafka.broker.replica_manager import Replica, ReplicaManager
    from minikafka.kraft_controller.metadata.image import BrokerRegistration, MetadataImage, TopicImage
    from minikafka.kraft_controller.metadata.records import BrokerStatus

    brokers = Map({b: BrokerRegistration(b, "x", 10, (), "", BrokerStatus.UNFENCED) for b in (0, 1, 2)})
    topics = [TopicImage(f"t{index}", uuid.uuid4()) for index in range(TOPICS)]
    image = MetadataImage(
        brokers=brokers,
        topics_by_name=Map({topic.name: topic for topic in topics}),
        topics_by_id=Map({topic.topic_id: topic for topic in topics}),
    )
    config = SimpleNamespace(node_id=0, replica_lag_time_max_ms=30000)
    manager = ReplicaManager(config, None, SimpleNamespace(image=image), None, lambda: 10, lambda: True)  # type: ignore[arg-type]
    lines = []
    for number in range(partitions):
        topic, partition = topics[number % TOPICS], number // TOPICS
        tp = TopicPartition(topic.name, partition)
        metadata = PartitionMetadata((0, 1, 2), (0, 1, 2), 0, 1, 1)
        role = make_leader(str(tp), 0, 10, metadata, 0, 0, PartitionConfig(2, 30000), 0).state
        manager.replicas[tp] = Replica(tp, topic.topic_id, EmptyLog(str(tp)), role, ProducePurgatory(str(tp)))  # type: ignore[arg-type]
        lines.append(PartitionFetchState(topic.topic_id.bytes, topic.name, partition, 1, 0, -1, 0, 1 << 20))
    lines.sort(key=lambda line: (line.topic, line.partition))
    return manager, lines


async def measure_child(partitions: int, fetches: int) -> dict[str, Any]:
    import structlog

    from minikafka.broker.fetch_session import FetchSessionCache
    from minikafka.broker.requests.fetch import FetchRequest, handle_fetch

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(40))
    manager, lines = leader_of(partitions)
    sessions = FetchSessionCache(10, itertools.count(42).__next__)
    opened = await handle_fetch(manager, sessions, FetchRequest(FOLLOWER, 10, 0, 1, 1 << 20, 0, 0, lines))
    session_id = opened.session_id
    epochs = itertools.count(1)

    async def idle() -> int:
        request = FetchRequest(FOLLOWER, 10, 0, 1, 1 << 20, session_id, next(epochs), [])
        answer = await handle_fetch(manager, sessions, request)
        return sum(len(topic.partitions) for topic in answer.topics)

    for _ in range(WARM_UP):
        await idle()
    start = time.process_time()
    answered = sum([await idle() for _ in range(fetches)])
    spent = time.process_time() - start
    return {"partitions": partitions, "fetches": fetches, "us_per_fetch": spent / fetches * 1e6, "answered": answered}


BENCHMARK = PairedBenchmark(
    __file__,
    __doc__.split("\n\n")[0],
    "session sizes",
    "idle fetches timed",
    total=100_000,
    minimum=20,
    figure="us_per_fetch",
    out=HERE / "idle_follower_fetch.json",
)


if __name__ == "__main__":
    paired_main(BENCHMARK, measure_child)
