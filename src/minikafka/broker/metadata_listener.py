"""The broker's view of the cluster metadata: it follows the KRaft log as an observer and replays it into an image.

The observer keeps its own copy of the log on disk (`<log.dirs>/__cluster_metadata-0`), so a restart replays from
there and only fetches what it missed. Only committed records are replayed (observers never see others); after
each batch of records the listener tells its subscribers which partitions changed, in log order.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import structlog

from minikafka.kraft_controller.metadata.image import BrokerRegistration, MetadataImage
from minikafka.kraft_controller.metadata.records import (
    Endpoint,
    Partition,
    PartitionChange,
    RecordDecodeError,
    decode_record,
)
from minikafka.kraft_controller.metadata.snapshot import image_from_snapshot
from minikafka.kraft_controller.raft.messages import LogEntry


@dataclass(frozen=True)
class MetadataDelta:
    """What one replay step changed: the image after it and the partitions whose state moved."""

    image: MetadataImage
    changed_partitions: tuple[tuple[uuid.UUID, int], ...]
    offset: int


Subscriber = Callable[[MetadataDelta], object]  # what it returns is not used


def endpoint_for(broker: BrokerRegistration, listener_name: str) -> Endpoint | None:
    """The broker's endpoint on the listener of that name, else its first one (Kafka answers per listener)."""
    named = next((e for e in broker.endpoints if e.name == listener_name), None)
    return named or (broker.endpoints[0] if broker.endpoints else None)


class MetadataListener:
    def __init__(self) -> None:
        self.image = MetadataImage()
        self.high_watermark = 0
        self.leader: tuple[int | None, int] = (None, 0)
        self.subscribers: list[Subscriber] = []
        self._log = structlog.get_logger()

    @property
    def offset(self) -> int:
        """The offset of the last record replayed (-1 before any)."""
        return self.image.offset

    @property
    def caught_up(self) -> bool:
        """Replayed up to the quorum's high watermark (exclusive), give or take the control records at its end,
        which replay nothing."""
        return self.high_watermark > 0 and self.offset >= self.high_watermark - 2

    def subscribe(self, subscriber: Subscriber) -> None:
        self.subscribers.append(subscriber)

    # ---- Raft listener ----

    def handle_commit(self, entries: Sequence[LogEntry]) -> None:
        changed: list[tuple[uuid.UUID, int]] = []
        for entry in entries:
            try:
                record = decode_record(entry.data)
            except RecordDecodeError as error:
                self._log.error("metadata_record_undecodable", offset=entry.offset, error=str(error))
                continue
            self.image = self.image.replay(record, entry.offset)
            if isinstance(record, Partition | PartitionChange):
                changed.append((record.topic_id, record.partition_id))
        self._publish(tuple(dict.fromkeys(changed)))

    def handle_high_watermark(self, high_watermark: int) -> None:
        self.high_watermark = high_watermark

    def handle_leader_change(self, epoch: int, leader_id: int | None, epoch_start_offset: int) -> None:
        self.leader = (leader_id, epoch)

    def handle_snapshot(self, data: bytes, end_offset: int) -> None:
        self.image = image_from_snapshot(data, end_offset)
        self._log.info("metadata_snapshot_loaded", end_offset=end_offset)
        changed = tuple((topic.topic_id, index) for topic, index, _ in self.image.partitions())
        self._publish(changed)

    def _publish(self, changed: tuple[tuple[uuid.UUID, int], ...]) -> None:
        delta = MetadataDelta(self.image, changed, self.image.offset)
        for subscriber in self.subscribers:
            subscriber(delta)
