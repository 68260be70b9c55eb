"""The racks of each partition's replicas, for the rack-aware server-side assignors, as Kafka's
SubscribedTopicDescriber takes them from the metadata image: each replica's broker registration's rack
(`broker.rack`), a fenced broker's included (its registration stays in the image); a broker without one adds
none."""

from __future__ import annotations

from minikafka.broker.consumer_group.model import TopicPartition
from minikafka.kraft_controller.metadata.image import MetadataImage


def partition_racks(image: MetadataImage) -> dict[TopicPartition, frozenset[str]]:
    """Every partition of every topic -> its replicas' racks; empty when no broker has a rack (no preference)."""
    racks = {broker_id: broker.rack for broker_id, broker in image.brokers.items() if broker.rack}
    if not racks:
        return {}
    return {
        TopicPartition(name, index): frozenset(racks[r] for r in partition.replicas if r in racks)
        for name, topic in image.topics_by_name.items()
        for index, partition in topic.partitions.items()
    }
