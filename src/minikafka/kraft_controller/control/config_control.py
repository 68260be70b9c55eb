"""Dynamic configs in the metadata log (Kafka's ConfigurationControlManager): the ConfigRecords an alter generates,
and the cluster-wide min.insync.replicas that KIP-966 needs every node to share."""

from __future__ import annotations

from minikafka.kraft_controller.metadata.image import MIN_INSYNC_REPLICAS, MetadataImage
from minikafka.kraft_controller.metadata.records import CLUSTER_DEFAULT, ConfigRecord, ConfigResourceType, Record


def elr_safety_records(image: MetadataImage, static_min_insync_replicas: int) -> list[Record]:
    """With eligible.leader.replicas.version on, Kafka's maybeGenerateElrSafetyRecords: a cluster-wide
    min.insync.replicas (the active controller's static value) when the log has none, and no per-broker one. The
    controller puts a replica in the ELR only while the ISR is below its min ISR; that is safe only if the leader's
    HWM stood still meanwhile, which the leader decides with its own min ISR: both must read the same value."""
    if not image.elr_enabled:
        return []
    records: list[Record] = []
    if image.broker_config(CLUSTER_DEFAULT, MIN_INSYNC_REPLICAS) is None:
        value = str(static_min_insync_replicas)
        records.append(ConfigRecord(ConfigResourceType.BROKER, CLUSTER_DEFAULT, MIN_INSYNC_REPLICAS, value))
    for resource_name, configs in sorted(image.broker_configs.items()):
        if resource_name != CLUSTER_DEFAULT and MIN_INSYNC_REPLICAS in configs:
            records.append(ConfigRecord(ConfigResourceType.BROKER, resource_name, MIN_INSYNC_REPLICAS, None))
    return records
