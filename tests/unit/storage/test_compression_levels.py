"""Compression levels (KIP-390): compression.gzip.level, compression.lz4.level and compression.zstd.level, topic and
broker configs with Kafka's names, defaults and ranges, used when the leader recompresses a producer's batch."""

from __future__ import annotations

import pytest

from minikafka.broker.config import BrokerConfig
from minikafka.broker.kafka_wire.config_entries import (
    DEFAULT_CONFIG,
    DYNAMIC_TOPIC_CONFIG,
    INT,
    STATIC_BROKER_CONFIG,
    broker_entries,
    topic_entries,
)
from minikafka.common.compression import GZIP_LEVEL, LZ4_LEVEL, ZSTD_LEVEL, CompressionType
from minikafka.common.config import ConfigError, load_config
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import Record, build_batch, iter_batches
from minikafka.common.topic_config import DYNAMIC_BROKER_CONFIGS, TOPIC_CONFIGS, config_problem, validate_topic_configs
from minikafka.storage.log_validator import AppendOrigin, validate_records

BASE = {
    "node.id": "1",
    "process.roles": "broker",
    "listeners": "GRPC://127.0.0.1:9092",
    "controller.quorum.voters": "101@127.0.0.1:9000",
    "log.dirs": "/tmp/broker-1",
}
# Kafka's Compression classes: (config, min, max, default)
KAFKA_LEVELS = [
    ("compression.gzip.level", 1, 9, -1),
    ("compression.lz4.level", 1, 17, 9),
    ("compression.zstd.level", -131072, 22, 3),
]
RECORDS = [Record(b"value %d " % (n % 7) * 30, b"k%d" % n, 1000 + n) for n in range(200)]


def test_kafkas_names_ranges_and_defaults() -> None:
    declared = [(c.config, c.minimum, c.maximum, c.default) for c in (GZIP_LEVEL, LZ4_LEVEL, ZSTD_LEVEL)]
    assert declared == KAFKA_LEVELS
    defaults = load_config(BrokerConfig, BASE).log_config()
    assert (defaults.compression_gzip_level, defaults.compression_lz4_level, defaults.compression_zstd_level) == (
        -1,
        9,
        3,
    )


@pytest.mark.parametrize(("name", "low", "high", "default"), KAFKA_LEVELS)
def test_topic_and_dynamic_broker_configs_take_the_range_and_refuse_beyond(
    name: str, low: int, high: int, default: int
) -> None:
    for definitions in (TOPIC_CONFIGS, DYNAMIC_BROKER_CONFIGS):
        for good in (low, high, default):
            assert config_problem(definitions, name, str(good)) is None
        assert "Value must be" in (config_problem(definitions, name, str(high + 1)) or "")
        assert "not a number of type INT" in (config_problem(definitions, name, "fast") or "")
    with pytest.raises(KafkaError) as raised:
        validate_topic_configs({name: str(high + 1)})
    assert raised.value.code is ErrorCode.INVALID_CONFIG and name in raised.value.message


def test_gzip_takes_minus_one_but_no_other_level_below_one() -> None:
    assert config_problem(TOPIC_CONFIGS, "compression.gzip.level", "-1") is None
    problem = config_problem(TOPIC_CONFIGS, "compression.gzip.level", "0")
    assert problem == (
        "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1"
    )
    assert config_problem(TOPIC_CONFIGS, "compression.lz4.level", "0") == (
        "Invalid value 0 for configuration compression.lz4.level: Value must be at least 1"
    )


def test_a_static_broker_level_out_of_range_is_refused_and_a_topic_level_overrides_it() -> None:
    with pytest.raises(ConfigError):
        load_config(BrokerConfig, {**BASE, "compression.zstd.level": "23"})
    config = load_config(BrokerConfig, {**BASE, "compression.zstd.level": "7", "compression.gzip.level": "2"})
    log_config = config.log_config({"compression.zstd.level": "-5"})
    assert (log_config.compression_zstd_level, log_config.compression_gzip_level) == (-5, 2)
    assert log_config.compression_level(CompressionType.ZSTD) == -5
    assert log_config.compression_level(CompressionType.SNAPPY) is None


@pytest.mark.parametrize(
    ("codec", "fast", "strong"),
    [(CompressionType.GZIP, 1, 9), (CompressionType.LZ4, 9, 17), (CompressionType.ZSTD, -50, 19)],
    ids=lambda v: v.name if isinstance(v, CompressionType) else str(v),
)
def test_the_leader_recompresses_at_the_topics_level(codec: CompressionType, fast: int, strong: int) -> None:
    sent = build_batch(RECORDS, producer_id=5, producer_epoch=0, base_sequence=0)
    sizes = []
    for level in (fast, strong):
        validated = validate_records(sent, AppendOrigin.CLIENT, 1 << 20, compression=codec, compression_level=level)
        (batch,) = validated.batches
        assert batch.compression_type == codec and batch.is_valid()
        assert [(r.key, r.value) for r in batch.records()] == [(r.key, r.value) for r in RECORDS]
        sizes.append(batch.size)
    assert sizes[1] < sizes[0]  # the stronger level compresses more


def test_each_codec_at_its_extreme_levels_still_decodes() -> None:
    codecs = ((CompressionType.GZIP, GZIP_LEVEL), (CompressionType.LZ4, LZ4_LEVEL), (CompressionType.ZSTD, ZSTD_LEVEL))
    for codec, levels in codecs:
        for level in (levels.minimum, levels.maximum, levels.default):
            data = build_batch(RECORDS[:20], compression=codec, compression_level=level)
            assert [r.value for b in iter_batches(data) for r in b.records()] == [r.value for r in RECORDS[:20]]


def test_describe_configs_lists_the_levels_for_a_topic_and_a_broker() -> None:
    config = load_config(BrokerConfig, {**BASE, "compression.lz4.level": "12"})
    topic = {e.name: e for e in topic_entries(config, {"compression.zstd.level": "-7"})}
    shown = {name: (topic[name].value, topic[name].source) for name, *_ in KAFKA_LEVELS}
    assert shown == {
        "compression.gzip.level": ("-1", DEFAULT_CONFIG),
        "compression.lz4.level": ("12", STATIC_BROKER_CONFIG),
        "compression.zstd.level": ("-7", DYNAMIC_TOPIC_CONFIG),
    }
    assert all(topic[name].config_type == INT for name, *_ in KAFKA_LEVELS)
    broker = {e.name: e for e in broker_entries(config)}
    assert all(not broker[name].read_only and broker[name].config_type == INT for name, *_ in KAFKA_LEVELS)
