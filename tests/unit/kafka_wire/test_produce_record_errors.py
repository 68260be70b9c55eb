"""A compacted topic refuses a producer's batch holding records without a key with INVALID_RECORD and names each
such record by its index in the batch (Produce's record_errors, v8 on), as Kafka does: librdkafka fails those
records with INVALID_RECORD and the others with _INVALID_DIFFERENT_RECORD (its test 0011)."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.produce.v7 import request as v7
from kio.schema.produce.v9 import request as v9

from minikafka.broker.kafka_wire import apis
from minikafka.broker.kafka_wire.context import WireContext
from minikafka.broker.kafka_wire.framing import ApiHeader, Request, encode_response
from minikafka.broker.log_manager import TopicPartition
from minikafka.broker.produce_purgatory import ProducePurgatory
from minikafka.broker.replica.partition import PartitionConfig, PartitionMetadata, make_leader
from minikafka.broker.replica_manager import Replica, ReplicaManager
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import InvalidRecordError, Record, build_batch
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_validator import AppendOrigin, validate_records
from minikafka.storage.partition_log import PartitionLog

TP = TopicPartition("keyed", 0)
COMPACTED = LogConfig(cleanup_policy=("compact",))
PRODUCE = 0
# Records 0, 3 and 7 have no key.
RECORDS = [Record(b"v%d" % i, None if i in (0, 3, 7) else b"k%d" % i) for i in range(10)]


def test_the_validator_names_every_record_without_a_key() -> None:
    with pytest.raises(InvalidRecordError) as raised:
        validate_records(build_batch(RECORDS), AppendOrigin.CLIENT, 1 << 20, compacted=True, partition="keyed-0")
    assert [e.batch_index for e in raised.value.record_errors] == [0, 3, 7]
    assert raised.value.record_errors[0].message == (
        "Compacted topic cannot accept message without key in topic partition keyed-0."
    )
    assert raised.value.message.startswith("One or more records have been rejected due to 3 record errors in total")


def test_a_batch_whose_records_all_have_keys_is_taken() -> None:
    keyed = [Record(b"v", b"k%d" % i) for i in range(3)]
    assert validate_records(build_batch(keyed), AppendOrigin.CLIENT, 1 << 20, compacted=True).record_count == 3


def leading_manager(tmp_path: Path) -> ReplicaManager:
    config = SimpleNamespace(node_id=0)
    topic = SimpleNamespace(name="keyed", topic_id=uuid.uuid4())
    image = SimpleNamespace(topics_by_name={"keyed": topic}, partition=lambda topic_id, index: object(), brokers={})
    manager = ReplicaManager(
        config,  # type: ignore[arg-type]
        SimpleNamespace(unopened={}),  # type: ignore[arg-type]
        SimpleNamespace(image=image),  # type: ignore[arg-type]
        None,  # type: ignore[arg-type]
        lambda: 10,
        lambda: True,
    )
    log = PartitionLog.open(tmp_path / "keyed-0", COMPACTED, 0)
    metadata = PartitionMetadata((0,), (0,), 0, 1, 1)
    role = make_leader("keyed-0", 0, 10, metadata, 0, 0, PartitionConfig(1, 30000), 0).state
    manager.replicas[TP] = Replica(TP, topic.topic_id, log, role, ProducePurgatory("keyed-0"))
    return manager


def produce(manager: ReplicaManager, version: int) -> Any:
    schema = v9 if version == 9 else v7
    data = schema.PartitionProduceData(index=0, records=build_batch(RECORDS))
    body = schema.ProduceRequest(
        transactional_id=None,
        acks=1,
        timeout=datetime.timedelta(seconds=5),
        topic_data=(schema.TopicProduceData(name="keyed", partition_data=(data,)),),
    )
    ctx = WireContext(manager, "PLAINTEXT")
    request = Request(ApiHeader(PRODUCE, version, 1), "test", body)

    async def answer() -> Any:
        return await apis.HANDLERS[PRODUCE](ctx, request)

    response: Any = asyncio.run(answer())
    encode_response(1, response)  # every field is one kio can write at this version
    [topic] = response.responses
    [partition] = topic.partition_responses
    return partition


def test_produce_v8_on_answers_the_records_at_fault(tmp_path: Path) -> None:
    manager = leading_manager(tmp_path)
    answer = produce(manager, 9)
    assert int(answer.error_code.value) == ErrorCode.INVALID_RECORD
    assert [e.batch_index for e in answer.record_errors] == [0, 3, 7]
    assert answer.error_message.startswith("One or more records have been rejected")
    assert manager.replicas[TP].log.log_end_offset == 0  # nothing of the batch was appended


def test_produce_before_v8_answers_the_error_alone(tmp_path: Path) -> None:
    answer = produce(leading_manager(tmp_path), 7)
    assert int(answer.error_code.value) == ErrorCode.INVALID_RECORD


def test_a_sound_batch_with_a_bad_header_names_no_record() -> None:
    batch = bytearray(build_batch([Record(b"v", b"k")]))
    with pytest.raises(KafkaError) as raised:
        validate_records(bytes(batch[:-1]), AppendOrigin.CLIENT, 1 << 20, compacted=True)
    assert getattr(raised.value, "record_errors", ()) == ()
