"""AlterPartition v3 validation of one partition, in Kafka's order; the first failure wins.

Pure: judged against the image only. The whole-request broker epoch check (STALE_BROKER_EPOCH) happens before,
in replication_control.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.requests import AlterPartitionPartition
from minikafka.kraft_controller.metadata.image import MetadataImage, TopicImage
from minikafka.kraft_controller.metadata.records import BrokerStatus, LeaderRecoveryState


@dataclass(frozen=True)
class Rejected:
    error: ErrorCode
    details: Mapping[str, Any] = field(default_factory=dict)  # expected vs actual, for the rejection event


@dataclass(frozen=True)
class Accepted:
    new_isr: tuple[int, ...]


@dataclass(frozen=True)
class IneligibleReplica:
    broker_id: int
    reason: str  # unregistered | fenced | in_controlled_shutdown | stale_broker_epoch
    requested_broker_epoch: int
    current_broker_epoch: int | None


def validate_alter_partition(
    image: MetadataImage,
    requester_id: int,
    topic: TopicImage | None,
    request: AlterPartitionPartition,
    broker_epoch_check: bool = True,
    partition_epoch_check: bool = True,
) -> Accepted | Rejected:
    """`partition_epoch_check` False: a request computed against an older partition epoch is judged as if current
    (only to demonstrate the stale ISR the check keeps out)."""
    if topic is None:
        return Rejected(ErrorCode.UNKNOWN_TOPIC_ID)
    current = topic.partitions.get(request.partition_index)
    if current is None:
        return Rejected(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    epochs = {
        "expected_leader_epoch": current.leader_epoch,
        "actual_leader_epoch": request.leader_epoch,
        "expected_partition_epoch": current.partition_epoch,
        "actual_partition_epoch": request.partition_epoch,
    }
    # A request from the future means this controller has not replayed what the sender saw: it is not current.
    if request.leader_epoch > current.leader_epoch or request.partition_epoch > current.partition_epoch:
        return Rejected(ErrorCode.NOT_CONTROLLER, epochs)
    if request.leader_epoch < current.leader_epoch:
        return Rejected(ErrorCode.FENCED_LEADER_EPOCH, epochs)
    if requester_id != current.leader:
        return Rejected(
            ErrorCode.INVALID_REQUEST,
            {"why": "not_leader", "expected_leader": current.leader, "actual_leader": requester_id},
        )
    if partition_epoch_check and request.partition_epoch < current.partition_epoch:
        return Rejected(ErrorCode.INVALID_UPDATE_VERSION, epochs)

    new_isr = tuple(state.broker_id for state in request.new_isr_with_epochs)
    if request.leader_recovery_state is LeaderRecoveryState.RECOVERING and (
        current.leader_recovery_state is LeaderRecoveryState.RECOVERED or len(new_isr) > 1
    ):
        return Rejected(
            ErrorCode.INVALID_REQUEST,
            {
                "why": "leader_recovery_state",
                "expected": current.leader_recovery_state.name,
                "actual": request.leader_recovery_state.name,
            },
        )
    if len(set(new_isr)) != len(new_isr):
        return Rejected(ErrorCode.INVALID_REQUEST, {"why": "duplicate_isr_members", "isr": new_isr})
    outside = [b for b in new_isr if b not in current.replicas]
    if outside:
        return Rejected(
            ErrorCode.INVALID_REQUEST,
            {"why": "isr_not_subset_of_replicas", "isr": new_isr, "replicas": current.replicas, "outside": outside},
        )
    if current.leader not in new_isr:
        return Rejected(
            ErrorCode.INVALID_REQUEST, {"why": "isr_without_leader", "isr": new_isr, "leader": current.leader}
        )

    ineligible = ineligible_replicas(image, request, broker_epoch_check)
    if ineligible:
        return Rejected(
            ErrorCode.INELIGIBLE_REPLICA,
            {
                "ineligible_replicas": [
                    {
                        "broker_id": r.broker_id,
                        "reason": r.reason,
                        "requested_broker_epoch": r.requested_broker_epoch,
                        "current_broker_epoch": r.current_broker_epoch,
                    }
                    for r in ineligible
                ]
            },
        )
    return Accepted(new_isr)


def ineligible_replicas(
    image: MetadataImage, request: AlterPartitionPartition, broker_epoch_check: bool
) -> list[IneligibleReplica]:
    """KIP-903: members that are unregistered, fenced, shutting down, or proposed with another epoch than their
    current registration's (the last check is what `alter.partition.broker.epoch.check=false` disables)."""
    found = []
    for state in request.new_isr_with_epochs:
        registration = image.broker(state.broker_id)
        if registration is None:
            reason = "unregistered"
        elif registration.status is BrokerStatus.FENCED:
            reason = "fenced"
        elif registration.status is BrokerStatus.CONTROLLED_SHUTDOWN:
            reason = "in_controlled_shutdown"
        elif broker_epoch_check and state.broker_epoch != -1 and registration.broker_epoch != state.broker_epoch:
            # -1: the leader has had no Fetch from this member yet, so it vouches for no epoch (as in Kafka)
            reason = "stale_broker_epoch"
        else:
            continue
        found.append(
            IneligibleReplica(
                broker_id=state.broker_id,
                reason=reason,
                requested_broker_epoch=state.broker_epoch,
                current_broker_epoch=None if registration is None else registration.broker_epoch,
            )
        )
    return found
