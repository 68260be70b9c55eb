"""ApiVersions: the keys and version ranges this listener answers. Each range starts no higher than what older
librdkafka (kcat 1.7) requires before it uses record batch v2: Produce 3, Fetch 4, ListOffsets 1."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire import group_apis
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.framing import API_VERSIONS_KEY, response_class
from minikafka.common.errors import ErrorCode

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3

SUPPORTED: dict[int, tuple[int, int]] = {
    PRODUCE: (3, 12),
    FETCH: (4, 16),
    LIST_OFFSETS: (1, 7),
    METADATA: (0, 12),
    API_VERSIONS_KEY: (0, 4),
    **group_apis.VERSIONS,
}


def supports(api_key: int, api_version: int) -> bool:
    low, high = SUPPORTED.get(api_key, (0, -1))
    return low <= api_version <= high


def response(api_version: int, error: ErrorCode = ErrorCode.NONE) -> Any:
    """The answer at `api_version`; an unsupported version gets it in v0's format, as Kafka does, so the client
    can read the ranges and retry at one of them."""
    cls = response_class(API_VERSIONS_KEY, api_version if supports(API_VERSIONS_KEY, api_version) else 0)
    entry = sibling(cls, "ApiVersion")
    keys = tuple(build(entry, api_key=key, min_version=low, max_version=high) for key, (low, high) in SUPPORTED.items())
    return build(cls, error_code=error, api_keys=keys, throttle_time=0)
