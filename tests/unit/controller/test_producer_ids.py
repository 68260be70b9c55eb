"""AllocateProducerIds (Kafka's ProducerIdControlManager): blocks of 1000 ids, each committed as a ProducerIdsRecord
before it is handed out, never twice, only to a registered broker at its current epoch, kept in snapshots."""

from __future__ import annotations

import pytest
from controller_harness import Harness

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.producer_id_control import PRODUCER_ID_BLOCK_SIZE
from minikafka.kraft_controller.control.requests import AllocateProducerIdsRequest
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import ProducerIds, decode_record, encode_record


def test_blocks_follow_each_other_across_brokers_and_a_new_controller(harness: Harness) -> None:
    one, two = harness.start_broker(1), harness.start_broker(2)
    first = harness.commit(harness.controller.allocate_producer_ids(AllocateProducerIdsRequest(1, one)))
    second = harness.commit(harness.controller.allocate_producer_ids(AllocateProducerIdsRequest(2, two)))
    assert (first.producer_id_start, first.producer_id_len) == (0, PRODUCER_ID_BLOCK_SIZE)
    assert second.producer_id_start == PRODUCER_ID_BLOCK_SIZE
    assert harness.committed[-1][1] == ProducerIds(2, two, 2 * PRODUCER_ID_BLOCK_SIZE)
    # A controller that loads a snapshot of this image continues after the last block.
    image = harness.image
    records = [decode_record(encode_record(r)) for r in image.to_records()]
    assert MetadataImage.from_records(records, image.offset).next_producer_id == 2 * PRODUCER_ID_BLOCK_SIZE


@pytest.mark.parametrize(
    ("broker_id", "epoch_delta", "error"),
    [(1, -1, ErrorCode.STALE_BROKER_EPOCH), (9, 0, ErrorCode.BROKER_ID_NOT_REGISTERED)],
)
def test_only_a_registered_broker_at_its_epoch_gets_a_block(
    harness: Harness, broker_id: int, epoch_delta: int, error: ErrorCode
) -> None:
    epoch = harness.start_broker(1)
    with pytest.raises(KafkaError) as raised:
        harness.controller.allocate_producer_ids(AllocateProducerIdsRequest(broker_id, epoch + epoch_delta))
    assert raised.value.code == error
    assert harness.image.next_producer_id == 0


def test_a_replayed_record_never_moves_the_next_id_back() -> None:
    image = MetadataImage().replay(ProducerIds(1, 0, 5000), 0).replay(ProducerIds(2, 0, 2000), 1)
    assert image.next_producer_id == 5000
