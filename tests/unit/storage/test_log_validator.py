"""LogValidator: every batch a producer or a leader may not send is refused with Kafka's error, and good ones pass."""

from __future__ import annotations

import pytest
from storage_helpers import BAD_BATCHES, BAD_CASES, compress_records, rewritten, three

from minikafka.common.compression import CompressionType
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import (
    CONTROL_FLAG,
    HEADER_SIZE,
    TRANSACTIONAL_FLAG,
    Header,
    Record,
    build_batch,
    read_header,
)
from minikafka.storage.log_validator import AppendOrigin, validate_records

CLIENT, REPLICATION = AppendOrigin.CLIENT, AppendOrigin.REPLICATION
ORIGINS = {"client": CLIENT, "replication": REPLICATION}
LIMIT = 1 << 20


@pytest.mark.parametrize(("case", "origin"), BAD_CASES)
def test_bad_batches_are_refused_with_kafkas_error(case: str, origin: str) -> None:
    bad = BAD_BATCHES[case]
    with pytest.raises(KafkaError) as raised:
        validate_records(bad.make(), ORIGINS[origin], LIMIT)
    assert raised.value.code is ErrorCode[bad.error], raised.value.message


@pytest.mark.parametrize("case", sorted(n for n, bad in BAD_BATCHES.items() if "replication" not in bad.refused_from))
def test_a_follower_checks_a_leaders_batches_as_kafkas_do_without_walking_their_records(case: str) -> None:
    """Framing, size, CRC and the header's rules only: what only the walk of a producer's records finds (the
    leader made it) or a client-only rule refuses passes, and a compressed batch is never decompressed."""
    assert validate_records(BAD_BATCHES[case].make(), REPLICATION, LIMIT).batches


def test_a_leader_may_replicate_what_only_clients_may_not_send() -> None:
    control = rewritten(three(), attributes=CONTROL_FLAG)
    idempotent = rewritten(three(), producer_id=7, producer_epoch=0, base_sequence=-1)
    placed = rewritten(three(), base_offset=5)
    result = validate_records(control + idempotent + placed, REPLICATION, LIMIT)
    assert [b.base_offset for b in result.batches] == [0, 0, 5] and result.record_count == 9


def test_good_batches_pass_with_their_totals() -> None:
    records = [
        Record(b"x" * 300, key=None, timestamp_ms=5000, headers=(Header("h", b"1"), Header("n", None))),
        Record(None, key=b"key", timestamp_ms=4000),
        Record(b"", key=b"", timestamp_ms=2**40),
        *(Record(b"v" * 1000, key=b"k%d" % i, timestamp_ms=i) for i in range(200)),  # two-byte deltas too
    ]
    batch = build_batch(records, producer_id=3, producer_epoch=0, base_sequence=0)
    result = validate_records(batch, CLIENT, LIMIT)
    assert (len(result.batches), result.record_count, result.max_timestamp) == (1, 203, 2**40)
    transactional = build_batch(
        records[:1], producer_id=3, producer_epoch=0, base_sequence=0, attributes=TRANSACTIONAL_FLAG
    )
    assert validate_records(transactional, CLIENT, LIMIT).record_count == 1


def test_too_large_before_anything_else() -> None:
    with pytest.raises(KafkaError) as raised:
        validate_records(rewritten(three(), attributes=1), CLIENT, len(three()) - 1)
    assert raised.value.code is ErrorCode.MESSAGE_TOO_LARGE


YEAR_2200_MS = 7_258_118_400_000


@pytest.mark.parametrize("claimed", [YEAR_2200_MS, 0, -1])
@pytest.mark.parametrize("codec", [CompressionType.NONE, CompressionType.GZIP])
def test_a_producers_max_timestamp_is_set_from_its_records(claimed: int, codec: CompressionType) -> None:
    # Kafka's LogValidator (CreateTime): batch.setMaxTimestamp(the largest record timestamp), the CRC made again.
    plain = build_batch([Record(b"a", timestamp_ms=1000), Record(b"b", timestamp_ms=3000), Record(b"c", None, 2000)])
    body = compress_records(plain[HEADER_SIZE:], codec) if codec else None
    sent = rewritten(plain, body, max_timestamp=claimed, attributes=int(codec))
    result = validate_records(sent, CLIENT, LIMIT)
    [batch] = result.batches
    assert result.max_timestamp == batch.max_timestamp == 3000 and batch.is_valid()
    assert batch.compression_type == codec and [r.timestamp_ms for r in batch.records()] == [1000, 3000, 2000]
    # A leader's batches are stored as it wrote them (Kafka's follower does not validate them).
    assert validate_records(sent, REPLICATION, LIMIT).max_timestamp == claimed


def test_a_batch_whose_max_timestamp_matches_its_records_is_passed_as_sent() -> None:
    sent = build_batch([Record(b"a", timestamp_ms=5), Record(b"b", timestamp_ms=4)])
    [batch] = validate_records(sent, CLIENT, LIMIT).batches
    assert batch.buffer is sent and batch == read_header(sent)
