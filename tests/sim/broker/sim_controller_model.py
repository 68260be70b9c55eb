"""A small controller model for the broker simulation: registrations, fencing, elections and AlterPartition.

It applies AlterPartition's acceptance rules in Kafka's order, including the KIP-903 broker-epoch check (switchable, to
show what goes wrong without it). Broker epochs are offsets of a pretend metadata log, so they only grow. The lead
may later swap this for the real `kraft_controller.control` managers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from minikafka.broker.replica.partition import AlterPartitionProposal, AlterPartitionResult, PartitionMetadata
from minikafka.common.errors import ErrorCode


@dataclass
class Registration:
    broker_epoch: int
    fenced: bool


@dataclass(frozen=True)
class MetadataSnapshot:
    """What a broker learns from one metadata update: the partition and the eligible brokers' epochs."""

    partition: PartitionMetadata
    broker_epochs: dict[int, int]  # registered and unfenced brokers
    image: Any = None  # the production controller's metadata image, when it is behind the simulation


@dataclass
class ControllerModel:
    replicas: tuple[int, ...]
    isr: list[int]
    broker_epoch_check: bool = True
    leader: int = -1
    leader_epoch: int = 0
    partition_epoch: int = 0
    brokers: dict[int, Registration] = field(default_factory=dict)
    isr_epochs: dict[int, int] = field(default_factory=dict)  # the epoch each ISR member was admitted with
    stale_commits: list[tuple[int, int, int]] = field(default_factory=list)  # (broker, committed epoch, current)
    next_record_offset: int = 1

    def __post_init__(self) -> None:
        for broker in self.replicas:
            self.brokers[broker] = Registration(self._record(), fenced=False)
        self.isr_epochs = {b: self.brokers[b].broker_epoch for b in self.isr}
        self.leader = self.isr[0]

    def _record(self) -> int:
        offset = self.next_record_offset
        self.next_record_offset += 1
        return offset

    def snapshot(self) -> MetadataSnapshot:
        partition = PartitionMetadata(
            self.replicas, tuple(sorted(self.isr)), self.leader, self.leader_epoch, self.partition_epoch
        )
        epochs = {b: r.broker_epoch for b, r in self.brokers.items() if not r.fenced}
        return MetadataSnapshot(partition, epochs)

    # ---- broker lifecycle ----

    def register(self, broker: int, previous_broker_epoch: int = -1) -> int:
        """A new incarnation: a new epoch; the old one is fenced (out of the ISR unless it is the last member)."""
        self._fence(broker)
        self.brokers[broker] = Registration(self._record(), fenced=True)
        return self.brokers[broker].broker_epoch

    def fence(self, broker: int) -> None:
        """The session timed out."""
        self._fence(broker)

    def unfence(self, broker: int) -> None:
        registration = self.brokers[broker]
        if not registration.fenced:
            return
        registration.fenced = False
        if self.leader == -1:
            self._elect()

    def _fence(self, broker: int) -> None:
        registration = self.brokers[broker]
        changed = False
        if not registration.fenced:
            registration.fenced = True
        if broker in self.isr and len(self.isr) > 1:
            self.isr.remove(broker)  # the last replica standing stays
            self.isr_epochs.pop(broker, None)
            changed = True
        if self.leader == broker:
            self._elect()
            changed = False  # _elect bumped the epochs
        if changed:
            self.partition_epoch += 1

    def _elect(self) -> None:
        candidates = [r for r in self.replicas if r in self.isr and not self.brokers[r].fenced]
        leader = candidates[0] if candidates else -1
        if leader != self.leader:
            self.leader = leader
            self.leader_epoch += 1
            self.partition_epoch += 1

    # ---- AlterPartition v3 ----

    def alter_partition(
        self, requester: int, requester_epoch: int, proposal: AlterPartitionProposal
    ) -> AlterPartitionResult:
        if self.brokers[requester].broker_epoch != requester_epoch:
            return AlterPartitionResult(ErrorCode.STALE_BROKER_EPOCH)
        if proposal.leader_epoch > self.leader_epoch or proposal.partition_epoch > self.partition_epoch:
            return AlterPartitionResult(ErrorCode.NOT_CONTROLLER)
        if proposal.leader_epoch < self.leader_epoch:
            return AlterPartitionResult(ErrorCode.FENCED_LEADER_EPOCH)
        if requester != self.leader:
            return AlterPartitionResult(ErrorCode.INVALID_REQUEST)
        if proposal.partition_epoch < self.partition_epoch:
            return AlterPartitionResult(ErrorCode.INVALID_UPDATE_VERSION)
        new_isr = [s.broker_id for s in proposal.new_isr_with_epochs]
        if len(set(new_isr)) != len(new_isr) or not set(new_isr) <= set(self.replicas) or self.leader not in new_isr:
            return AlterPartitionResult(ErrorCode.INVALID_REQUEST)
        for state in proposal.new_isr_with_epochs:
            registration = self.brokers.get(state.broker_id)
            if registration is None or registration.fenced:
                return AlterPartitionResult(ErrorCode.INELIGIBLE_REPLICA)
            if self.broker_epoch_check and state.broker_epoch not in (-1, registration.broker_epoch):
                return AlterPartitionResult(ErrorCode.INELIGIBLE_REPLICA)
        if set(new_isr) != set(self.isr):
            self.isr = sorted(new_isr)
            self.isr_epochs = {s.broker_id: s.broker_epoch for s in proposal.new_isr_with_epochs}
            self.partition_epoch += 1
            for state in proposal.new_isr_with_epochs:
                current = self.brokers[state.broker_id].broker_epoch
                if state.broker_epoch not in (-1, current):
                    self.stale_commits.append((state.broker_id, state.broker_epoch, current))
        return AlterPartitionResult(ErrorCode.NONE, tuple(self.isr), self.leader_epoch, self.partition_epoch)
