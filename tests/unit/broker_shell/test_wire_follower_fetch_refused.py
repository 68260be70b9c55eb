"""A follower-style Fetch on the Kafka listener (replica_id before v15, ReplicaState from v15) is refused with
TOPIC_AUTHORIZATION_FAILED for every partition, as Kafka answers a fetcher without CLUSTER_ACTION: replication runs
on gRPC only, so it can neither read as a follower nor move the leader's view of a follower."""

from __future__ import annotations

import datetime
from pathlib import Path

from kio.schema.fetch.v4 import request as v4
from kio.schema.fetch.v15 import request as v15
from test_fetch_sessions_served import FOLLOWER, TOPIC_ID, leader_of_two_partitions

from minikafka.broker.kafka_wire import fetch
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request
from minikafka.broker.log_manager import TopicPartition
from minikafka.common.record_batch import Record, build_batch

NO_WAIT = datetime.timedelta(0)
TOPIC_AUTHORIZATION_FAILED = 29


def _v4(replica_id: int) -> Request:
    partition = v4.FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
    body = v4.FetchRequest(
        replica_id=replica_id,
        max_wait=NO_WAIT,
        min_bytes=1,
        topics=(v4.FetchTopic(topic="orders", partitions=(partition,)),),
    )
    return Request(ApiHeader(1, 4, 1), "test", body)


def _v15(replica_id: int) -> Request:
    partition = v15.FetchPartition(partition=0, fetch_offset=2, partition_max_bytes=1 << 20)
    body = v15.FetchRequest(
        cluster_id=None,
        replica_state=v15.ReplicaState(replica_id=replica_id, replica_epoch=1),
        max_wait=NO_WAIT,
        min_bytes=1,
        topics=(v15.FetchTopic(topic_id=TOPIC_ID, partitions=(partition,)),),
        forgotten_topics_data=(),
    )
    return Request(ApiHeader(1, 15, 1), "test", body)


async def test_follower_fetches_are_refused_and_consumer_fetches_served(tmp_path: Path) -> None:
    manager = leader_of_two_partitions(tmp_path)
    tp = TopicPartition("orders", 0)
    manager.produce(tp, build_batch([Record(b"v"), Record(b"w")]), 1, 30000)
    ctx = WireContext(manager, "PLAINTEXT")
    high_watermark = manager.replicas[tp].role.high_watermark
    for request in (_v4(FOLLOWER), _v15(FOLLOWER)):
        answer = await fetch.handle(ctx, request)
        (partition,) = answer.responses[0].partitions
        assert int(partition.error_code.value) == TOPIC_AUTHORIZATION_FAILED and not partition.records
    # The follower's fetch at the log end did not count: the high watermark did not move.
    assert manager.replicas[tp].role.high_watermark == high_watermark
    consumer = await fetch.handle(ctx, _v4(-1))
    (partition,) = consumer.responses[0].partitions
    assert int(partition.error_code.value) == 0
