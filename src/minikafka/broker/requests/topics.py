"""How a request names a topic: by its 16-byte id, or by name (Kafka's APIs before topic ids, and gRPC consumers)."""

from __future__ import annotations

import functools
import uuid

from minikafka.kraft_controller.metadata.image import MetadataImage, TopicImage

TOPIC_ID_BYTES = 16
# Session key of a topic name the metadata does not know (it has no id): never 16 bytes, so never taken for an id.
UNKNOWN_NAME_PREFIX = b"?"


@functools.lru_cache(maxsize=1024)
def _topic_id(raw: bytes) -> uuid.UUID | None:
    return uuid.UUID(bytes=raw) if len(raw) == TOPIC_ID_BYTES else None


def topic_by_id_bytes(image: MetadataImage, raw: bytes) -> TopicImage | None:
    """The topic a request names by its 16-byte id (UUIDs are built once per id, not on every request)."""
    topic_id = _topic_id(raw)
    return image.topic(topic_id) if topic_id is not None else None


def topic_key(image: MetadataImage, topic_id: bytes, name: str) -> bytes:
    """The 16-byte id a request line is keyed by (in fetch sessions, and to find duplicates): its own, or its
    name's; a name the metadata does not know gets a key of its own that is no id."""
    if len(topic_id) == TOPIC_ID_BYTES:
        return topic_id
    known = image.topics_by_name.get(name)
    if known is not None:
        return known.topic_id.bytes
    key = UNKNOWN_NAME_PREFIX + name.encode()
    return key + UNKNOWN_NAME_PREFIX if len(key) == TOPIC_ID_BYTES else key
