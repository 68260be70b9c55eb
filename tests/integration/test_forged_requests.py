"""Forged or buggy requests sent to a real cluster leave it unharmed (issue 36's protocol holes: protocol handling,
not authentication, which test_node_authentication covers).

- Follower Fetches from each follower (with its own certificate, as a buggy follower would send them) with a huge
  broker epoch: before the fix the leader took the highest epoch it had seen as the bar, locked the real followers
  out and shrank the ISR to itself, so acks=all failed for good. Now only the metadata's epoch is the bar.
- Produce and Fetch to partitions -1, 99 and 2^31-1 of an existing topic answer UNKNOWN_TOPIC_OR_PARTITION (not the
  retriable NOT_LEADER_OR_FOLLOWER, on which clients retry until they time out).
- Every malformed batch a producer must not send (a records count of 2^31-1 over one record with a valid CRC, counts
  that disagree with the records, compression on a plain body, the control flag, transactional without a producer
  id, ...) is refused with Kafka's error, and the partition stays writable and readable.
"""

from __future__ import annotations

import asyncio
import sys
import time
import uuid
from pathlib import Path

import pytest
from cluster_fixtures import eventually, node_tls, running_cluster
from test_broker_replication import consume_all

from minikafka.client.admin import AdminClient
from minikafka.client.producer import Producer, ProducerConfig
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import sync_channel
from minikafka.common.record_batch import Record, build_batch
from minikafka.pb import broker_pb2, broker_pb2_grpc

sys.path.append(str(Path(__file__).parents[1] / "unit" / "storage"))
from storage_helpers import BAD_BATCHES  # noqa: E402 - the bad batches the storage tests define, sent for real

pytestmark = pytest.mark.integration

TOPIC = "forged"
LAG_MS = 1500
SETTINGS = {"replica.lag.time.max.ms": str(LAG_MS)}


async def produce_for(bootstrap: list[str], seconds: float, prefix: str) -> list[tuple[int, str]]:
    """acks=all writes, one at a time, for `seconds`: every one must be acknowledged."""
    config = ProducerConfig(acks=-1, linger_ms=0, delivery_timeout_ms=10_000, request_timeout_ms=5_000)
    producer = Producer(bootstrap, config)
    acked: list[tuple[int, str]] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = f"{prefix}-{len(acked):05d}"
        metadata = await (await producer.send(TOPIC, value.encode(), partition=0))
        acked.append((metadata.offset, value))
    await producer.close()
    return acked


def forged_fetch(topic_id: bytes, replica_id: int, leader_epoch: int, fetch_offset: int) -> broker_pb2.FetchRequest:
    request = broker_pb2.FetchRequest(
        replica_state=broker_pb2.ReplicaState(replica_id=replica_id, replica_epoch=2**62),
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
    )
    topic = request.topics.add(topic_id=topic_id, topic=TOPIC)
    topic.partitions.add(
        partition=0,
        current_leader_epoch=leader_epoch,
        fetch_offset=fetch_offset,
        last_fetched_epoch=-1,
        partition_max_bytes=1 << 20,
    )
    return request


def test_forged_fetches_bad_partition_indexes_and_malformed_batches_leave_the_cluster_unharmed(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", **SETTINGS) as cluster:
        admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        admin.create_topic(TOPIC, assignment=[[1, 2, 3]], configs={"min.insync.replicas": "2"})
        describe = lambda: admin.describe_topics([TOPIC])[0]  # noqa: E731
        eventually(lambda: describe().partitions[0].isr == [1, 2, 3], 30, "ISR [1, 2, 3]")
        acked = asyncio.run(produce_for(cluster.bootstrap_servers, 0.5, "before"))
        topic = describe()
        partition = topic.partitions[0]
        leader = broker_pb2_grpc.BrokerStub(sync_channel(cluster.node(partition.leader).address))

        leader_spec = cluster.node(partition.leader)
        for follower in (2, 3):
            request = forged_fetch(uuid.UUID(topic.topic_id).bytes, follower, partition.leader_epoch, len(acked))
            as_follower = sync_channel(leader_spec.inter_node_address, node_tls(cluster, follower))
            answer = broker_pb2_grpc.BrokerStub(as_follower).Fetch(request, timeout=5)
            assert answer.responses[0].partitions[0].error_code == ErrorCode.NONE

        # Longer than replica.lag.time.max.ms several times over: the real followers must stay in the ISR and every
        # acks=all write must be acknowledged.
        acked += asyncio.run(produce_for(cluster.bootstrap_servers, 3 * LAG_MS / 1000, "after"))
        assert describe().partitions[0].isr == [1, 2, 3]

        for index in (-1, 99, 2**31 - 1):
            produce = broker_pb2.ProduceRequest(acks=-1, timeout_ms=5000)
            produce.topic_data.add(name=TOPIC).partition_data.add(index=index, records=build_batch([Record(b"x")]))
            result = leader.Produce(produce, timeout=5).responses[0].partition_responses[0]
            assert result.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, index
            fetch = broker_pb2.FetchRequest(max_wait_ms=0, max_bytes=1 << 20)
            fetch.topics.add(topic=TOPIC).partitions.add(partition=index, fetch_offset=0, partition_max_bytes=1024)
            data = leader.Fetch(fetch, timeout=5).responses[0].partitions[0]
            assert data.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, index

        for name, bad in sorted(BAD_BATCHES.items()):
            if "client" not in bad.refused_from:
                continue
            produce = broker_pb2.ProduceRequest(acks=-1, timeout_ms=5000)
            produce.topic_data.add(name=TOPIC).partition_data.add(index=0, records=bad.make())
            result = leader.Produce(produce, timeout=5).responses[0].partition_responses[0]
            assert ErrorCode(result.error_code).name == bad.error, name
        acked += asyncio.run(produce_for(cluster.bootstrap_servers, 0.2, "last"))  # still writable

        read = asyncio.run(consume_all(cluster.bootstrap_servers, len(acked), TOPIC))
        assert [offset for offset, value in acked if read.get(offset) != value] == []
