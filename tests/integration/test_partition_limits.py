"""Partitions a client asks for stay within what a broker can open (real processes, raw Kafka requests):

- One CreateTopics of 12,000 partitions is refused whole with POLICY_VIOLATION (44), Kafka's answer to an
  operation of more than 10,000 records; the broker opens no file for it.
- A broker whose file limit is lowered under it to fewer descriptors than two per partition hosts every partition
  of a new topic: its segment files open on use and at most minikafka.log.max.open.files (32 here) stay open, so
  Produce to each answers NONE, no partition fails to open and the log directory stays online. (A partition that
  still cannot open fails alone with KAFKA_STORAGE_ERROR: tests/unit/broker_shell.)
"""

from __future__ import annotations

import asyncio
import datetime
import resource
from collections.abc import Iterator
from typing import Any

import pytest
from cluster_fixtures import running_cluster
from hostile_clients import alive, events, open_files

from minikafka.client.kafka_wire_client import KafkaConnection, nested, request_class
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration

TIMEOUT = datetime.timedelta(seconds=30)
CROWDED = "crowded"
CROWDED_PARTITIONS = 200
MAX_OPEN_FILES = 32


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    overrides = {"minikafka.log.max.open.files": str(MAX_OPEN_FILES)}
    with running_cluster(tmp_path_factory.mktemp("partition-limits"), 1, 1, **overrides) as started:
        yield started


async def create_topic(connection: KafkaConnection, name: str, partitions: int, validate_only: bool) -> Any:
    cls = request_class(19, 7)
    creatable = nested(cls, "CreatableTopic")
    topic = creatable(name=name, num_partitions=partitions, replication_factor=1, assignments=(), configs=())
    response = await connection.send(cls(topics=(topic,), timeout=TIMEOUT, validate_only=validate_only))
    return response.topics[0]


async def produce_each(connection: KafkaConnection, topic: str, partitions: int) -> dict[int, int]:
    cls = request_class(0, 9)
    batch = build_batch([Record(b"value")])
    data = tuple(nested(cls, "PartitionProduceData")(index=p, records=batch) for p in range(partitions))
    entry = nested(cls, "TopicProduceData")(name=topic, partition_data=data)
    response = await connection.send(cls(transactional_id=None, acks=1, timeout=TIMEOUT, topic_data=(entry,)))
    return {p.index: p.error_code for p in response.responses[0].partition_responses}


def test_one_operation_of_more_than_10000_partitions_is_refused(cluster: Cluster) -> None:
    spec = cluster.brokers[0]
    pid = cluster.pids[spec.node_id]
    assert spec.kafka_address is not None
    before = open_files(pid)

    async def run() -> tuple[Any, Any]:
        connection = KafkaConnection(spec.kafka_address, 60)
        try:
            checked = await create_topic(connection, "huge", 12_000, validate_only=True)
            if checked.error_code != ErrorCode.POLICY_VIOLATION:
                return checked, checked  # no real 12,000 partitions on a broker that would accept them
            created = await create_topic(connection, "huge", 12_000, validate_only=False)
            return checked, created
        finally:
            await connection.close()

    checked, created = asyncio.run(run())
    print(f"CreateTopics of 12,000 partitions: {created.error_code} {created.error_message!r}")
    for answer in (checked, created):
        assert answer.error_code == ErrorCode.POLICY_VIOLATION, answer
        assert answer.error_message.startswith("Unable to perform excessively large batch operation.")
    assert open_files(pid) <= before + 2


def test_a_file_limit_below_two_files_per_partition_fails_no_partition(cluster: Cluster) -> None:
    spec = cluster.brokers[0]
    pid = cluster.pids[spec.node_id]
    assert spec.kafka_address is not None

    async def run() -> dict[str, object]:
        connection = KafkaConnection(spec.kafka_address, 60)
        seen: dict[str, object] = {"most_files": 0}
        try:
            assert (await create_topic(connection, "warm-up", 1, False)).error_code == ErrorCode.NONE
            before = open_files(pid)
            soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (before + 60, hard))
            try:
                assert (await create_topic(connection, CROWDED, CROWDED_PARTITIONS, False)).error_code == 0
                for _ in range(300):  # bounded: until the broker has applied the whole topic (it does so in slices)
                    seen["limited"] = await produce_each(connection, CROWDED, CROWDED_PARTITIONS)
                    seen["most_files"] = max(seen["most_files"], open_files(pid))  # type: ignore[call-overload]
                    if set(seen["limited"].values()) == {ErrorCode.NONE}:  # type: ignore[attr-defined]
                        break
                    await asyncio.sleep(0.1)  # a retry backoff, as a producer's retry.backoff.ms
                seen["alive"] = alive(pid)
            finally:
                resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
            seen["before"] = before
            return seen
        finally:
            await connection.close()

    seen = asyncio.run(run())
    limited: dict[int, int] = seen["limited"]  # type: ignore[assignment]
    failed = sorted(p for p, code in limited.items() if code != ErrorCode.NONE)
    answers = sorted({ErrorCode.of(code).name for code in limited.values()})
    print(
        f"{len(failed)} of {CROWDED_PARTITIONS} partitions failed (answers {answers}); "
        f"open files {seen['before']} before, at most {seen['most_files']} with the limit at {seen['before']} + 60"
    )
    assert seen["alive"] and alive(pid)
    assert failed == []
    assert events(spec.events_path, "partition_open_failed") == []
    assert events(spec.events_path, "log_dir_offline") == []
