"""A transactional producer spoken by hand on the Kafka protocol, for the scenarios that need one request of a
transaction to arrive late: it builds a produce now and sends it when told, as a request held on the network would
arrive. Each call is one request to the broker given (a single-broker coordinator and leader, or the coordinator's
address found first)."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from minikafka.client.kafka_wire_client import KafkaWireClient, nested, request_class
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import TRANSACTIONAL_FLAG, Record, build_batch

if TYPE_CHECKING:
    from minikafka.deploy.scenario.steps import Steps

TIMEOUT = datetime.timedelta(seconds=30)
FIND_COORDINATOR, INIT_PRODUCER_ID, ADD_PARTITIONS_TO_TXN, END_TXN = 10, 22, 24, 26
PRODUCE, LIST_OFFSETS, API_VERSIONS, DESCRIBE_TRANSACTIONS = 0, 2, 18, 65


class WireTransactionalProducer:
    def __init__(self, client: KafkaWireClient, transactional_id: str, topic: str, partition: int = 0) -> None:
        self.client, self.transactional_id = client, transactional_id
        self.topic, self.partition = topic, partition
        self.producer_id, self.epoch, self.sequence = -1, -1, 0
        self.coordinator = ""
        self.base_offset = -1  # where the last produce answered NONE was written
        self.version = 0  # the transaction version it speaks (`transaction_version` reads the cluster's)

    async def _coordinator(self, body: Any) -> Any:
        return await self.client.connection(self.coordinator).send(body)

    async def _leader(self, body: Any) -> Any:
        return await self.client.any_broker(body)

    async def init(self, deadline_s: float = 30) -> None:
        """FindCoordinator (key type 1) and InitProducerId, retried while the coordinator is not ready."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + deadline_s
        while True:
            found = await self.client.any_broker(
                request_class(FIND_COORDINATOR, 3)(key=self.transactional_id, key_type=1)
            )
            if ErrorCode.of(found.error_code) == ErrorCode.NONE:
                self.coordinator = f"{found.host}:{found.port}"
                response = await self._coordinator(
                    request_class(INIT_PRODUCER_ID, 4)(
                        transactional_id=self.transactional_id,
                        transaction_timeout=datetime.timedelta(seconds=60),
                        producer_id=-1,
                        producer_epoch=-1,
                    )
                )
                if ErrorCode.of(response.error_code) == ErrorCode.NONE:
                    self.producer_id, self.epoch = response.producer_id, response.producer_epoch
                    return
            if loop.time() > deadline:
                raise TimeoutError(f"no producer id for {self.transactional_id} within {deadline_s} s")
            await asyncio.sleep(0.2)

    async def add_partition(self) -> ErrorCode:
        """AddPartitionsToTxn for the partition; a producer of transaction version 2 sends none (its Produce v12
        has the leader add the partition)."""
        if self.version >= 2:
            return ErrorCode.NONE
        cls = request_class(ADD_PARTITIONS_TO_TXN, 3)
        topic = nested(cls, "AddPartitionsToTxnTopic")(name=self.topic, partitions=(self.partition,))
        response = await self._coordinator(
            cls(
                v3_and_below_transactional_id=self.transactional_id,
                v3_and_below_producer_id=self.producer_id,
                v3_and_below_producer_epoch=self.epoch,
                v3_and_below_topics=(topic,),
            )
        )
        return ErrorCode.of(response.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code)

    def batch(self, value: bytes) -> bytes:
        """The next transactional batch of this producer (its sequence taken now, whenever it is sent)."""
        records = build_batch(
            [Record(value)],
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            base_sequence=self.sequence,
            attributes=TRANSACTIONAL_FLAG,
        )
        self.sequence += 1
        return records

    async def produce(self, records: bytes, transactional_id: str | None = "") -> ErrorCode:
        """Send `records` (acks=all) to the partition's leader; `transactional_id` None sends a plain produce."""
        cls = request_class(PRODUCE, 12 if self.version >= 2 else 9)
        data = nested(cls, "PartitionProduceData")(index=self.partition, records=records)
        topic = nested(cls, "TopicProduceData")(name=self.topic, partition_data=(data,))
        txn = self.transactional_id if transactional_id == "" else transactional_id
        response = await self._leader(cls(transactional_id=txn, acks=-1, timeout=TIMEOUT, topic_data=(topic,)))
        answer = response.responses[0].partition_responses[0]
        self.base_offset = int(answer.base_offset)
        return ErrorCode.of(answer.error_code)

    async def end(self, commit: bool) -> ErrorCode:
        return await self.send_end(self.end_request(commit))

    async def transaction_version(self) -> int:
        """The cluster's finalized transaction.version, from ApiVersions v3 as a Kafka client reads it (0 when
        absent); the producer speaks transaction version 2 (EndTxn v5) when it is 2."""
        response = await self.client.any_broker(
            request_class(API_VERSIONS, 3)(client_software_name="minikafka-scenario", client_software_version="1")
        )
        levels = {f.name: int(f.max_version_level) for f in response.finalized_features}
        self.version = levels.get("transaction.version", 0)
        return self.version

    def end_request(self, commit: bool) -> Any:
        """The EndTxn for the transaction under way, built now (its producer id and epoch taken now), to send
        whenever: v5 for a producer of transaction version 2, else v3."""
        cls = request_class(END_TXN, 5 if self.version >= 2 else 3)
        return cls(
            transactional_id=self.transactional_id,
            producer_id=self.producer_id,
            producer_epoch=self.epoch,
            committed=commit,
        )

    async def send_end(self, request: Any) -> ErrorCode:
        """Send an EndTxn; a v5 answer gives the producer id and epoch the producer goes on with (a new epoch
        starts its sequences again)."""
        response = await self._coordinator(request)
        error = ErrorCode.of(response.error_code)
        if error == ErrorCode.NONE and getattr(response, "producer_epoch", -1) >= 0:
            if (response.producer_id, response.producer_epoch) != (self.producer_id, self.epoch):
                self.sequence = 0
            self.producer_id, self.epoch = int(response.producer_id), int(response.producer_epoch)
        return error

    async def state(self) -> str:
        """The transaction's state as DescribeTransactions names it (CompleteAbort, Ongoing, ...)."""
        response = await self._coordinator(
            request_class(DESCRIBE_TRANSACTIONS, 0)(transactional_ids=(self.transactional_id,))
        )
        return str(response.transaction_states[0].transaction_state)

    async def offsets(self) -> tuple[int, int]:
        """(high watermark, last stable offset) of the partition: ListOffsets LATEST read_uncommitted and
        read_committed."""
        found = []
        for isolation in (0, 1):
            cls = request_class(LIST_OFFSETS, 7)
            line = nested(cls, "ListOffsetsPartition")(
                partition_index=self.partition, current_leader_epoch=-1, timestamp=-1
            )
            topic = nested(cls, "ListOffsetsTopic")(name=self.topic, partitions=(line,))
            response = await self._leader(cls(replica_id=-1, isolation_level=isolation, topics=(topic,)))
            found.append(int(response.topics[0].partitions[0].offset))
        return found[0], found[1]


def run_transactional_story(
    s: Steps, topic: str, transactional_id: str, leader: int, story: Callable[[Steps, WireTransactionalProducer], None]
) -> None:
    """`topic`-0 created on brokers 1-3 led by `leader` with a full ISR, then `story` told with a transactional
    producer speaking to the leader's Kafka listener (coordinator and leader both, with one state partition)."""
    s.create_topic(topic, [[leader, *(b for b in (1, 2, 3) if b != leader)]], f"{topic}-0 is created, led by "
                   f"broker {leader}", {"min.insync.replicas": "2"})  # fmt: skip
    s.wait_isr(topic, [1, 2, 3], "every replica joins the ISR")
    address = s.cluster.node(leader).kafka_address
    assert address is not None, f"broker {leader} has a Kafka listener"
    client = KafkaWireClient([address])
    try:
        story(s, WireTransactionalProducer(client, transactional_id, topic))
    finally:
        s.loop.run(client.close())
