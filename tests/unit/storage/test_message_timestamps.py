"""message.timestamp.type and message.timestamp.before/after.max.ms: a leader refuses a producer's records whose
CreateTime is out of range (INVALID_TIMESTAMP, each such record named), and stamps a LogAppendTime topic's batch
with its own clock, as Kafka's LogValidator does."""

from __future__ import annotations

from pathlib import Path

import pytest
from storage_helpers import compress_records, rewritten

from minikafka.common.compression import CompressionType
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import HEADER_SIZE, InvalidRecordError, Record, build_batch
from minikafka.common.topic_config import TOPIC_CONFIGS, config_problem
from minikafka.storage.dump_log import dump_log, format_text
from minikafka.storage.log_config import LogConfig
from minikafka.storage.log_validator import AppendOrigin, TimestampRules, validate_records
from minikafka.storage.partition_log import PartitionLog

NOW = 1_700_000_000_000
HOUR = 3_600_000
LIMIT = 1 << 20


def _batch(*stamps: int) -> bytes:
    return build_batch([Record(b"v%d" % i, timestamp_ms=stamp) for i, stamp in enumerate(stamps)])


def test_a_record_more_than_the_future_bound_ahead_is_refused_and_named() -> None:
    rules = TimestampRules(NOW, after_max_ms=HOUR)
    with pytest.raises(InvalidRecordError) as raised:
        validate_records(
            _batch(NOW, NOW + HOUR + 1, NOW + HOUR, NOW + 2 * HOUR), AppendOrigin.CLIENT, LIMIT, timestamps=rules
        )
    error = raised.value
    assert error.code is ErrorCode.INVALID_TIMESTAMP
    assert [e.batch_index for e in error.record_errors] == [1, 3]
    assert error.record_errors[0].message == (
        f"Timestamp {NOW + HOUR + 1} of message with offset 1 is out of range. "
        f"The timestamp should be within [{NOW - (2**63 - 1)}, {NOW + HOUR}]"
    )
    assert "2 record errors in total" in error.message


def test_the_past_bound_applies_only_where_set_and_no_timestamp_is_never_out_of_range() -> None:
    old = _batch(NOW - 10 * HOUR, -1, NOW)
    assert validate_records(old, AppendOrigin.CLIENT, LIMIT, timestamps=TimestampRules(NOW, after_max_ms=HOUR)).batches
    with pytest.raises(InvalidRecordError) as raised:
        validate_records(old, AppendOrigin.CLIENT, LIMIT, timestamps=TimestampRules(NOW, before_max_ms=HOUR))
    assert [e.batch_index for e in raised.value.record_errors] == [0]


def test_a_compressed_batch_is_walked_for_the_records_out_of_range() -> None:
    plain = _batch(NOW, NOW + 5 * HOUR)
    sent = rewritten(plain, compress_records(plain[HEADER_SIZE:], CompressionType.GZIP), attributes=1)
    with pytest.raises(InvalidRecordError) as raised:
        validate_records(sent, AppendOrigin.CLIENT, LIMIT, timestamps=TimestampRules(NOW, after_max_ms=HOUR))
    assert [e.batch_index for e in raised.value.record_errors] == [1]


@pytest.mark.parametrize("recompress", [None, CompressionType.ZSTD])
def test_log_append_time_stamps_the_batch_with_the_leaders_clock(recompress: CompressionType | None) -> None:
    """Any timestamp passes; the header's max timestamp becomes the leader's clock and its timestamp type
    LogAppendTime, the CRC made again; the records keep their own timestamps."""
    rules = TimestampRules(NOW, log_append_time=True, after_max_ms=HOUR)
    result = validate_records(
        _batch(5, NOW + 9 * HOUR), AppendOrigin.CLIENT, LIMIT, compression=recompress, timestamps=rules
    )
    [batch] = result.batches
    assert batch.has_log_append_time and batch.is_valid()
    assert result.max_timestamp == batch.max_timestamp == NOW
    assert [r.timestamp_ms for r in batch.records()] == [5, NOW + 9 * HOUR]
    # A follower stores the leader's stamped batch as it is.
    assert validate_records(batch.buffer, AppendOrigin.REPLICATION, LIMIT).max_timestamp == NOW


def test_a_leaders_log_applies_its_topics_configs(tmp_path: Path) -> None:
    stamped = PartitionLog.open(tmp_path / "a-0", LogConfig(message_timestamp_type="LogAppendTime"), 0)
    info = stamped.append_as_leader(_batch(1), leader_epoch=0, now_ms=0, wall_clock_ms=NOW)
    assert (info.log_append_time_ms, info.max_timestamp) == (NOW, NOW)
    bounded = PartitionLog.open(tmp_path / "b-0", LogConfig(), 0)
    with pytest.raises(InvalidRecordError):
        bounded.append_as_leader(_batch(NOW + HOUR + 1), leader_epoch=0, now_ms=0, wall_clock_ms=NOW)
    assert bounded.log_end_offset == 0  # nothing written
    info = bounded.append_as_leader(_batch(NOW + HOUR), leader_epoch=0, now_ms=0, wall_clock_ms=NOW)
    assert (info.first_offset, info.log_append_time_ms) == (0, -1)
    # Readers take the leader's stamp as every record's: a search by time, and dump-log as DumpLogSegments prints it.
    assert stamped.offset_for_timestamp(NOW) is not None and stamped.offset_for_timestamp(NOW + 1) is None
    stamped.close()
    dump = dump_log(tmp_path / "a-0" / "00000000000000000000.log", print_records=True)
    assert (dump["batches"][0]["timestamp_type"], dump["batches"][0]["records"][0]["timestamp"]) == (
        "LogAppendTime",
        NOW,
    )
    assert f"| offset: 0 LogAppendTime: {NOW} key" in format_text(dump)


def test_the_configs_are_validated_with_kafkas_messages() -> None:
    assert config_problem(TOPIC_CONFIGS, "message.timestamp.type", "LogAppendTime") is None
    assert config_problem(TOPIC_CONFIGS, "message.timestamp.type", "WallTime") == (
        "Invalid value WallTime for configuration message.timestamp.type: "
        "String must be one of: CreateTime, LogAppendTime"
    )
    assert "at least 0" in str(config_problem(TOPIC_CONFIGS, "message.timestamp.after.max.ms", "-1"))
    assert TOPIC_CONFIGS["message.timestamp.before.max.ms"].broker_name == "log.message.timestamp.before.max.ms"


def test_kafkas_inert_segment_configs_are_taken() -> None:
    """file.delete.delay.ms and preallocate: validated as Kafka's (librdkafka's 0077 sets the first) and kept."""
    assert config_problem(TOPIC_CONFIGS, "file.delete.delay.ms", "10000") is None
    assert config_problem(TOPIC_CONFIGS, "preallocate", "true") is None
    assert "true or false" in str(config_problem(TOPIC_CONFIGS, "preallocate", "yes"))
    assert TOPIC_CONFIGS["file.delete.delay.ms"].broker_name == "log.segment.delete.delay.ms"
