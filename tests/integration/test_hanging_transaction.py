"""KIP-890 part 1 against real processes, guard on and off: a transactional produce that arrives after its
transaction was aborted (a request delayed on the network, sent here late by a raw Kafka-protocol client).

With transaction.partition.verification.enable=true (the default) the leader asks the coordinator, which knows the
transaction is over: the produce is refused INVALID_TXN_STATE and the last stable offset moves on. With it false
the late batch opens a transaction no coordinator knows of: the LSO stops at it for good and a read_committed
consumer sees nothing written after it."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Iterator

import pytest
from cluster_fixtures import running_cluster

from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch
from minikafka.deploy import cluster_commands
from minikafka.deploy.local_cluster import Cluster

pytestmark = pytest.mark.integration

TOPIC = "hanging"
TIMEOUT = datetime.timedelta(seconds=30)
ONE_BROKER = {
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
}


@pytest.fixture(scope="module", params=["guarded", "unguarded"])
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    enabled = "true" if request.param == "guarded" else "false"
    overrides = {**ONE_BROKER, "transaction.partition.verification.enable": enabled}
    with running_cluster(tmp_path_factory.mktemp(request.param), 1, 1, **overrides) as started:
        with cluster_commands.admin_for(started, timeout_s=10) as admin:
            admin.create_topic(TOPIC, partitions=1, replication_factor=1)
        yield started


class RawProducer:
    """A transactional producer spoken by hand, so one of its produces can be sent late."""

    def __init__(self, client: KafkaWireClient, address: str) -> None:
        self.client, self.address = client, address
        self.producer_id, self.epoch, self.sequence = -1, -1, 0

    async def send(self, body: object) -> object:
        return await self.client.connection(self.address).send(body)

    async def init(self, transactional_id: str) -> None:
        async def answered() -> object | None:
            found = await self.send(request_class(10, 3)(key=transactional_id, key_type=1))
            if ErrorCode.of(found.error_code) != ErrorCode.NONE:  # type: ignore[attr-defined]
                return None
            cls = request_class(22, 4)
            response = await self.send(
                cls(
                    transactional_id=transactional_id,
                    transaction_timeout=datetime.timedelta(seconds=60),
                    producer_id=-1,
                    producer_epoch=-1,
                )
            )
            return response if ErrorCode.of(response.error_code) == ErrorCode.NONE else None  # type: ignore[attr-defined]

        response = await _eventually_async(answered, 30, "InitProducerId")
        self.producer_id, self.epoch = response.producer_id, response.producer_epoch  # type: ignore[attr-defined]

    async def add_partition(self, transactional_id: str) -> ErrorCode:
        cls = request_class(24, 3)
        topic = nested(cls, "AddPartitionsToTxnTopic")(name=TOPIC, partitions=(0,))
        response = await self.send(
            cls(
                v3_and_below_transactional_id=transactional_id,
                v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.epoch,
                v3_and_below_topics=(topic,),
            )
        )
        return ErrorCode.of(response.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)  # type: ignore[attr-defined]

    def batch(self, value: bytes) -> bytes:
        records = build_batch(
            [Record(value)],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            attributes=TRANSACTIONAL_FLAG,
        )
        self.sequence += 1
        return records

    async def produce(self, transactional_id: str | None, records: bytes) -> ErrorCode:
        cls = request_class(0, 9)
        data = nested(cls, "PartitionProduceData")(index=0, records=records)
        topic = nested(cls, "TopicProduceData")(name=TOPIC, partition_data=(data,))
        response = await self.send(
            cls(transactional_id=transactional_id, acks=-1, timeout=TIMEOUT, topic_data=(topic,))
        )
        return ErrorCode.of(response.responses[0].partition_responses[0].error_code)  # type: ignore[attr-defined]

    async def end(self, transactional_id: str, commit: bool) -> ErrorCode:
        cls = request_class(26, 3)
        response = await self.send(
            cls(
                transactional_id=transactional_id,
                producer_id=self.producer_id,
                producer_epoch=self.epoch,
                committed=commit,
            )
        )
        return ErrorCode.of(response.error_code)  # type: ignore[attr-defined]

    async def offsets(self) -> tuple[int, int]:
        """(high watermark, last stable offset) of the partition, as ListOffsets LATEST answers them."""
        found = []
        for isolation in (0, 1):
            cls = request_class(2, 7)
            partition = nested(cls, "ListOffsetsPartition")(partition_index=0, current_leader_epoch=-1, timestamp=-1)
            topic = nested(cls, "ListOffsetsTopic")(name=TOPIC, partitions=(partition,))
            response = await self.send(cls(replica_id=-1, isolation_level=isolation, topics=(topic,)))
            found.append(response.topics[0].partitions[0].offset)  # type: ignore[attr-defined]
        return found[0], found[1]


async def _eventually_async(probe: object, timeout_s: float, what: str) -> object:
    assert callable(probe)
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        value = await probe()
        if value is not None:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def late_produce(cluster: Cluster) -> tuple[ErrorCode, int, int]:
    """A transaction aborted, then a produce of it arriving late, then a plain record: (the late produce's error,
    the high watermark, the LSO) once the plain record is replicated and the markers are in."""
    address = cluster.kafka_bootstrap_servers.split(",")[0]
    client = KafkaWireClient([address])
    try:
        producer = RawProducer(client, address)
        await producer.init("late-writer")
        assert await producer.add_partition("late-writer") == ErrorCode.NONE
        assert await producer.produce("late-writer", producer.batch(b"on-time")) == ErrorCode.NONE
        delayed = producer.batch(b"late")  # sent, then held on the network while the transaction aborts
        assert await producer.end("late-writer", commit=False) == ErrorCode.NONE

        async def aborted() -> object | None:
            hwm, lso = await producer.offsets()
            return True if hwm == lso == 2 else None  # the record and its ABORT marker

        await _eventually_async(aborted, 30, "the abort marker written")
        late = await producer.produce("late-writer", delayed)
        plain = RawProducer(client, address)
        cls = request_class(0, 9)
        data = nested(cls, "PartitionProduceData")(index=0, records=build_batch([Record(b"after")]))
        topic = nested(cls, "TopicProduceData")(name=TOPIC, partition_data=(data,))
        await plain.send(cls(transactional_id=None, acks=-1, timeout=TIMEOUT, topic_data=(topic,)))
        hwm, lso = await producer.offsets()
        return late, hwm, lso
    finally:
        await client.close()


def test_a_late_transactional_produce(cluster: Cluster, request: pytest.FixtureRequest) -> None:
    late, hwm, lso = asyncio.run(late_produce(cluster))
    if request.node.callspec.params["cluster"] == "guarded":
        # Refused: nothing hangs, the LSO is the high watermark.
        assert late == ErrorCode.INVALID_TXN_STATE
        assert (hwm, lso) == (3, 3)
    else:
        # Written: a transaction no coordinator knows of holds the LSO at it for good.
        assert late == ErrorCode.NONE
        assert (hwm, lso) == (4, 2)
        assert asyncio.run(_lso(cluster)) == 2


async def _lso(cluster: Cluster) -> int:
    address = cluster.kafka_bootstrap_servers.split(",")[0]
    client = KafkaWireClient([address])
    try:
        return (await RawProducer(client, address).offsets())[1]
    finally:
        await client.close()
