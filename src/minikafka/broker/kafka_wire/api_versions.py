"""ApiVersions: the keys and version ranges this listener answers. Each range starts no higher than what older
librdkafka (kcat 1.7) requires before it uses record batch v2: Produce 3, Fetch 4, ListOffsets 1."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from minikafka.broker.kafka_wire import (
    acls,
    alter_configs,
    alter_replica_log_dirs,
    delete_records,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_topic_partitions,
    group_apis,
    partition_admin,
    raft_voters,
    sasl_apis,
    scram_credentials,
    transactions,
    update_features,
    write_txn_markers,
)
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import API_VERSIONS_KEY, response_class
from minikafka.broker.kafka_wire.init_producer_id import INIT_PRODUCER_ID
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.records import SUPPORTED_FEATURE_LEVELS

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DELETE_TOPICS, OFFSET_FOR_LEADER_EPOCH, DESCRIBE_CONFIGS = 19, 20, 23, 32
CREATE_PARTITIONS, DESCRIBE_CLUSTER = 37, 60

SUPPORTED: dict[int, tuple[int, int]] = {
    PRODUCE: (3, 12),
    FETCH: (4, 16),
    LIST_OFFSETS: (1, 10),  # v10 (Kafka 4.0's) is what version-inferring clients such as kafka-python look for
    METADATA: (0, 12),
    INIT_PRODUCER_ID: (0, 5),  # librdkafka enables idempotence only if the range holds 0
    CREATE_TOPICS: (2, 7),  # admin requests: the lowest versions Kafka 4 still has
    DELETE_TOPICS: (1, 6),
    OFFSET_FOR_LEADER_EPOCH: (2, 4),
    DESCRIBE_CONFIGS: (1, 4),
    CREATE_PARTITIONS: (0, 3),
    DESCRIBE_CLUSTER: (0, 2),
    API_VERSIONS_KEY: (0, 4),
    **delete_records.VERSIONS,
    **alter_replica_log_dirs.VERSIONS,
    **describe_log_dirs.VERSIONS,
    **describe_producers.VERSIONS,
    **describe_quorum.VERSIONS,
    **describe_topic_partitions.VERSIONS,
    **group_apis.VERSIONS,
    **partition_admin.VERSIONS,
    **sasl_apis.VERSIONS,
    **scram_credentials.VERSIONS,
    **alter_configs.VERSIONS,
    **transactions.VERSIONS,
    **acls.VERSIONS,
    **write_txn_markers.VERSIONS,
    **raft_voters.VERSIONS,
    **update_features.VERSIONS,
}


def supports(api_key: int, api_version: int, hidden: frozenset[int] = frozenset()) -> bool:
    """`hidden`: keys this broker's configuration turns off."""
    if api_key in hidden:
        return False
    low, high = SUPPORTED.get(api_key, (0, -1))
    return low <= api_version <= high


# The feature levels this broker can run at (Kafka's supported features): the controller refuses UpdateFeatures
# outside them.
SUPPORTED_FEATURES: dict[str, tuple[int, int]] = SUPPORTED_FEATURE_LEVELS


@dataclass(frozen=True)
class FinalizedFeatures:
    """The cluster's finalized feature levels (level 0 features absent, as Kafka lists them) and the metadata
    offset they were read at (Kafka's FinalizedFeaturesEpoch)."""

    levels: Mapping[str, int]
    epoch: int


NO_FEATURES = FinalizedFeatures({}, -1)


def response(
    api_version: int,
    error: ErrorCode = ErrorCode.NONE,
    hidden: frozenset[int] = frozenset(),
    features: FinalizedFeatures = NO_FEATURES,
) -> Any:
    """The answer at `api_version`; an unsupported version gets it in v0's format, as Kafka does, so the client
    can read the ranges and retry at one of them. Keys go in ascending order, as Kafka sends them (librdkafka
    binary-searches the list). From v3 the features too: a client reads transaction.version there to choose its
    transaction protocol."""
    version = api_version if supports(API_VERSIONS_KEY, api_version) else 0
    cls = response_class(API_VERSIONS_KEY, version)
    entry = sibling(cls, "ApiVersion")
    keys = tuple(
        build(entry, api_key=key, min_version=low, max_version=high)
        for key, (low, high) in sorted(SUPPORTED.items())
        if key not in hidden
    )
    if version < 3 or error != ErrorCode.NONE:
        return build(cls, error_code=error, api_keys=keys, throttle_time=0)
    supported = tuple(
        build(sibling(cls, "SupportedFeatureKey"), name=name, min_version=low, max_version=high)
        for name, (low, high) in sorted(SUPPORTED_FEATURES.items())
        if low > 0 or version >= 4  # v0-v3 omit a feature whose lowest level is 0, as Kafka does
    )
    finalized = tuple(
        build(sibling(cls, "FinalizedFeatureKey"), name=name, max_version_level=level, min_version_level=level)
        for name, level in sorted(features.levels.items())
        if level > 0
    )
    return build(
        cls,
        error_code=error,
        api_keys=keys,
        throttle_time=0,
        supported_features=supported,
        finalized_features_epoch=features.epoch,
        finalized_features=finalized,
    )


def finalized_features(levels: Mapping[str, int], metadata_offset: int) -> FinalizedFeatures:
    return FinalizedFeatures(dict(levels), metadata_offset)
