"""A partition's state as the Kafka listener's describing APIs answer it."""

from __future__ import annotations

from typing import Any

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.image import MetadataImage, PartitionRegistration


def partition_fields(image: MetadataImage, index: int, partition: PartitionRegistration) -> dict[str, Any]:
    """A partition's leader, replicas, ISR and offline replicas (unregistered or fenced), as Metadata and
    DescribeTopicPartitions answer them."""
    offline = tuple(r for r in partition.replicas if (known := image.broker(r)) is None or known.fenced)
    return {
        "error_code": ErrorCode.NONE if partition.leader >= 0 else ErrorCode.LEADER_NOT_AVAILABLE,
        "partition_index": index,
        "leader_id": partition.leader,
        "leader_epoch": partition.leader_epoch,
        "replica_nodes": tuple(partition.replicas),
        "isr_nodes": tuple(partition.isr),
        "offline_replicas": offline,
    }
