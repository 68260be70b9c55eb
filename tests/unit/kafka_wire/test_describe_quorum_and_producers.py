"""DescribeQuorum on a broker is forwarded to the active controller and answered for __cluster_metadata-0 (any
other partition: UNKNOWN_TOPIC_OR_PARTITION; no controller: REQUEST_TIMED_OUT); v2 names the voters' endpoints.
DescribeProducers lists the idempotent producers a replica of the partition knows."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from kio.schema.describe_producers.v0 import request as producers_v0
from kio.schema.describe_quorum.v0 import request as quorum_v0
from kio.schema.describe_quorum.v2 import request as quorum_v2
from test_delete_records import TP, leading_manager

from minikafka.broker.kafka_wire import api_versions, apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.pb import controller_pb2


class FakeController:
    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def call_within(self, method: str, _request: Any, _timeout_s: float) -> Any:
        self.asked.append(method)
        return self.answer


def quorum(version: int, topic: str, answer: Any) -> tuple[Any, FakeController]:
    schema = quorum_v2 if version == 2 else quorum_v0
    body = schema.DescribeQuorumRequest(
        topics=(schema.TopicData(topic_name=topic, partitions=(schema.PartitionData(partition_index=0),)),)
    )
    controller = FakeController(answer)
    config = SimpleNamespace(
        cluster_id="minikafka", request_timeout_ms=1000, voters={101: ("127.0.1.1", 9093), 102: ("127.0.1.2", 9093)}
    )
    ctx = WireContext(SimpleNamespace(controller=controller, config=config), "PLAINTEXT")  # type: ignore[arg-type]
    response = asyncio.run(apis.HANDLERS[55](ctx, Request(ApiHeader(55, version, 1), "test", body)))
    encode_response(1, response)  # every field is one kio can write at this version
    return response, controller


def controller_answer() -> controller_pb2.DescribeQuorumResponse:
    answer = controller_pb2.DescribeQuorumResponse(leader_id=101, leader_epoch=3, high_watermark=42)
    answer.current_voters.add(
        replica_id=101,
        log_end_offset=42,
        last_fetch_timestamp=5,
        last_caught_up_timestamp=5,
        replica_directory_id="AAAAAAAAAAEAAAAAAAAAAg",
    )
    answer.current_voters.add(replica_id=102, log_end_offset=40)
    answer.observers.add(replica_id=1, log_end_offset=42)
    return answer


def test_advertised_versions_are_kafka_4s() -> None:
    assert api_versions.SUPPORTED[55] == (0, 2) and api_versions.SUPPORTED[61] == (0, 0)


def test_describe_quorum_is_forwarded_and_answered_for_the_metadata_partition() -> None:
    response, controller = quorum(2, "__cluster_metadata", controller_answer())
    assert controller.asked == ["DescribeQuorum"] and int(response.error_code.value) == ErrorCode.NONE
    [topic] = response.topics
    [partition] = topic.partitions
    assert (partition.leader_id, partition.leader_epoch, partition.high_watermark) == (101, 3, 42)
    assert [(v.replica_id, v.log_end_offset) for v in partition.current_voters] == [(101, 42), (102, 40)]
    assert [o.replica_id for o in partition.observers] == [1]
    assert [v.replica_directory_id for v in partition.current_voters] == [
        uuid.UUID("00000000-0000-0001-0000-000000000002"),
        None,
    ]
    assert [(n.node_id, n.listeners[0].host, n.listeners[0].port) for n in response.nodes] == [
        (101, "127.0.1.1", 9093),
        (102, "127.0.1.2", 9093),
    ]
    v0, _ = quorum(0, "__cluster_metadata", controller_answer())
    assert v0.topics[0].partitions[0].leader_id == 101


def test_another_partition_or_no_controller_is_an_error() -> None:
    other, controller = quorum(0, "orders", controller_answer())
    assert int(other.error_code.value) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and controller.asked == []
    lost, _ = quorum(2, "__cluster_metadata", None)
    assert int(lost.error_code.value) == ErrorCode.REQUEST_TIMED_OUT and lost.topics == ()


def test_describe_producers_lists_the_leaders_idempotent_producers(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path, records=0, high_watermark=0)
    log = manager.replicas[TP].log
    records = [Record(b"a", timestamp_ms=7), Record(b"b", timestamp_ms=9)]
    batch = build_batch(records, producer_id=77, producer_epoch=2, base_sequence=0)
    log.append_as_leader(batch, 1, 0)
    body = producers_v0.DescribeProducersRequest(
        topics=(producers_v0.TopicRequest(name="orders", partition_indexes=(0, 1)),)
    )
    ctx = WireContext(manager, "PLAINTEXT")
    response = apis.HANDLERS[61](ctx, Request(ApiHeader(61, 0, 1), "test", body))
    encode_response(1, response)
    led, elsewhere = response.topics[0].partitions
    [producer] = led.active_producers
    assert (producer.producer_id, producer.producer_epoch, producer.last_sequence) == (77, 2, 1)
    assert producer.last_timestamp == 9 and producer.coordinator_epoch == -1
    assert int(elsewhere.error_code.value) == ErrorCode.NOT_LEADER_OR_FOLLOWER  # no replica of it here
