"""Kafka's BrokersToIsrs (with its BrokersToElrs folded in): by broker id, the partitions whose ISR or ELR holds that
broker or that it leads, and under NO_LEADER the partitions without a leader. A fencing, a controlled shutdown or a
re-registration reads one broker's partitions, an unfencing the leaderless ones, where a scan read every partition.

It follows the active controller's generation image record by record (`replayed`); the images themselves stay free
of it (a persistent index in every image doubled a record's replay, on every controller and broker). Mutable, owned
by the state machine: the generation functions take the keys it lists, sorted as `MetadataImage.partitions()`
yields them, at the moment they are generated.
"""

from __future__ import annotations

from minikafka.kraft_controller.metadata.image import MetadataImage, PartitionRegistration, TopicImage
from minikafka.kraft_controller.metadata.records import Partition, PartitionChange, Record, RemoveTopic, Topic

PartitionKey = tuple[str, int]  # (topic name, partition index): sorts as `MetadataImage.partitions()` yields


def index_keys(partition: PartitionRegistration | None) -> frozenset[int]:
    """Where a partition is filed: under its ISR and ELR members and its leader (NO_LEADER when it has none)."""
    if partition is None:
        return frozenset()
    return frozenset((*partition.isr, *partition.elr, partition.leader))


class BrokersToIsrs:
    def __init__(self) -> None:
        self._by_broker: dict[int, set[PartitionKey]] = {}

    @classmethod
    def of(cls, image: MetadataImage) -> BrokersToIsrs:
        index = cls()
        for topic, partition_id, partition in image.partitions():
            index._move((topic.name, partition_id), None, partition)
        return index

    def partitions_of(self, broker_id: int) -> list[PartitionKey]:
        """The broker's partitions (NO_LEADER: the leaderless ones), sorted, as they are now."""
        return sorted(self._by_broker.get(broker_id, ()))

    def brokers(self) -> dict[int, set[PartitionKey]]:
        """Every broker's partitions (a copy)."""
        return {broker_id: set(keys) for broker_id, keys in self._by_broker.items()}

    def replayed(self, record: Record, before: MetadataImage, after: MetadataImage) -> None:
        """Follow `record`, which took the image from `before` to `after`."""
        match record:
            case Partition() | PartitionChange():
                topic = after.topic(record.topic_id)
                if topic is not None:
                    previous = before.partition(record.topic_id, record.partition_id)
                    key = (topic.name, record.partition_id)
                    self._move(key, previous, topic.partitions.get(record.partition_id))
            case RemoveTopic():
                removed = before.topic(record.topic_id)
                if removed is not None:
                    self._drop_topic(removed)
            case Topic():
                replaced = before.topics_by_name.get(record.name)
                if replaced is not None:
                    self._drop_topic(replaced)

    def _drop_topic(self, topic: TopicImage) -> None:
        for partition_id, partition in topic.partitions.items():
            self._move((topic.name, partition_id), partition, None)

    def _move(
        self, key: PartitionKey, before: PartitionRegistration | None, after: PartitionRegistration | None
    ) -> None:
        was, now = index_keys(before), index_keys(after)
        if was == now:
            return
        for broker_id in was - now:
            keys = self._by_broker[broker_id]
            keys.discard(key)
            if not keys:
                del self._by_broker[broker_id]
        for broker_id in now - was:
            self._by_broker.setdefault(broker_id, set()).add(key)
