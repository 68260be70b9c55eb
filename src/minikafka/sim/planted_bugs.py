"""Bugs planted in the shipped code for one simulated run, to show the simulation finds what it should: each
replaces a few shell methods or core functions for the run's duration and puts them back after. Never used
outside `simulate`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from minikafka.broker.consumer_group import reconciliation as consumer_group_reconciliation
from minikafka.broker.consumer_group.model import NO_PARTITIONS
from minikafka.broker.group import coordinator as group_coordinator
from minikafka.broker.group import offsets as group_offsets
from minikafka.broker.group.coordinator import GroupCoordinator
from minikafka.broker.group.state import Group
from minikafka.broker.kafka_wire import group_offsets as offset_commit_api
from minikafka.broker.replica import partition as partition_core
from minikafka.broker.replica.divergence import FollowerTruncation
from minikafka.broker.replica.partition import AssignEpochStartOffset, Committed, Follower, Leader
from minikafka.broker.replica_manager import ReplicaManager
from minikafka.broker.transaction.markers import MarkerChannel
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control import cluster_control, config_control
from minikafka.kraft_controller.metadata.image import PartitionRegistration
from minikafka.kraft_controller.raft.driver import RaftDriver
from minikafka.kraft_controller.raft.file_log import RaftFileLog
from minikafka.storage import cleaner_plan, log_cleaner
from minikafka.storage.log_transactions import LogTransactions

Patch = tuple[Any, str, Any]  # (owner, attribute, replacement)


def _leader_acks_before_replication() -> list[Patch]:
    """The broker answers acks=all as soon as its own log has the batch (as acks=1): a leader cut off from its
    followers, or one that crashes before they fetch, loses acknowledged writes."""
    original = ReplicaManager.produce

    def produce(self: ReplicaManager, tp: Any, records: bytes, acks: int, *args: Any, **kwargs: Any) -> Any:
        return original(self, tp, records, 1 if acks == -1 else acks, *args, **kwargs)

    return [(ReplicaManager, "produce", produce)]


def _raft_counts_unflushed() -> list[Patch]:
    """The Raft leader's fetch handling no longer waits for its own appends to be fsynced (the durability gate):
    its unflushed entries count toward the high watermark, and a power loss can take a committed entry away."""
    original = RaftDriver._flush_in_background

    def flush_in_background(self: RaftDriver) -> None:
        original(self)
        self._durable.set()

    return [(RaftDriver, "_flush_in_background", flush_in_background)]


def _new_leader_forgets_its_epoch() -> list[Patch]:
    """A new leader does not cache the start of its epoch, and a follower cuts its log to its start when the
    leader's diverging-epoch answer is undefined (as the code once was): a follower holding a newer epoch than any
    the new leader wrote wipes its log."""
    make_leader = partition_core.make_leader

    def leader_without_epoch_start(*args: Any, **kwargs: Any) -> Any:
        transition = make_leader(*args, **kwargs)
        kept = tuple(e for e in transition.effects if not isinstance(e, AssignEpochStartOffset))
        return replace(transition, effects=kept)

    def truncation(self: Follower, diverging: Any, local: Any, log_end_offset: int) -> FollowerTruncation:
        if diverging.end_offset < 0 or local.end_offset < 0:
            return FollowerTruncation(0, True, "undefined")
        offset = min(local.end_offset, diverging.end_offset) if local.epoch == diverging.epoch else local.end_offset
        return FollowerTruncation(offset, True, "diverging")

    return [(partition_core, "make_leader", leader_without_epoch_start), (Follower, "truncation", truncation)]


def _controller_skips_cluster_min_isr() -> list[Patch]:
    """The active controller does not write the cluster-wide min.insync.replicas with the ELR on: a broker whose
    own min ISR is below the controller's acknowledges writes the controller's ELR election does not keep."""
    return [(config_control, "elr_safety_records", lambda _image, _static: [])]


def _isr_expansion_not_counted() -> list[Patch]:
    """While an ISR expansion is pending the HWM counts only the committed ISR, not the joining member."""
    return [(partition_core.PendingExpandIsr, "maximal_isr", property(lambda self: self.isr))]


def _isr_shrink_assumed() -> list[Patch]:
    """While an ISR shrink is pending the HWM counts the ISR as if the shrink were committed."""
    return [(partition_core.PendingShrinkIsr, "maximal_isr", property(lambda self: self.isr - self.removing))]


def _rollback_on_unknown_outcome() -> list[Patch]:
    """The leader rolls its pending ISR change back on any error answer, even one (a timeout) after which the
    controller may have applied it."""
    original = Leader.on_alter_partition_response

    def on_response(self: Leader, proposal: Any, result: Any, now_ms: int) -> Any:
        state = self.isr_state
        if result.error != ErrorCode.NONE and not isinstance(state, Committed) and state.proposal == proposal:
            return replace(self, isr_state=Committed(state.isr)), ()
        return original(self, proposal, result, now_ms)

    return [(Leader, "on_alter_partition_response", on_response)]


def _unclean_shutdown_counted_clean() -> list[Patch]:
    """The controller takes every new incarnation's registration for one after a clean shutdown: a broker that lost
    its unflushed tail to a power loss stays in the ELRs it was in."""
    original = cluster_control.handle_broker_shutdown

    def handle_broker_shutdown(image: Any, broker_id: int, clean: bool, *args: Any, **kwargs: Any) -> Any:
        return original(image, broker_id, True, *args, **kwargs)

    return [(cluster_control, "handle_broker_shutdown", handle_broker_shutdown)]


def _leader_change_keeps_leader_epoch() -> list[Patch]:
    """A new leader is committed in the leader epoch of the one before it: two leaders share an epoch, and a deposed
    leader's fetches and writes are not fenced."""
    original = PartitionRegistration.apply

    def apply(self: PartitionRegistration, change: Any) -> PartitionRegistration:
        return replace(original(self, change), leader_epoch=self.leader_epoch)

    return [(PartitionRegistration, "apply", apply)]


def _partition_epoch_not_bumped() -> list[Patch]:
    """A partition change keeps the partition epoch: a leader's AlterPartition naming the old state is taken as
    current."""
    original = PartitionRegistration.apply

    def apply(self: PartitionRegistration, change: Any) -> PartitionRegistration:
        return replace(original(self, change), partition_epoch=self.partition_epoch)

    return [(PartitionRegistration, "apply", apply)]


def _raft_log_not_fsynced() -> list[Patch]:
    """The Raft log's appends are never fsynced (a follower's before it fetches on, the leader's before it counts
    them): every entry still counts toward the high watermark, and a controller's power loss takes its log back to
    what a snapshot or a segment roll made durable."""
    append = RaftFileLog.append
    detached = RaftFileLog.detached_fsync

    def append_unflushed(self: RaftFileLog, entries: Any, now_ms: int, flush: bool = True) -> None:
        append(self, entries, now_ms, flush=False)

    def detached_fsync(self: RaftFileLog, now_ms: int) -> tuple[Callable[[], None], Callable[[], None]]:
        _fsync, then = detached(self, now_ms)
        return (lambda: None), then

    return [(RaftFileLog, "append", append_unflushed), (RaftFileLog, "detached_fsync", detached_fsync)]


def _sync_hands_one_assignment_to_all() -> list[Patch]:
    """The group coordinator, storing the leader's SyncGroup assignment, answers every member's SyncGroup with the
    first member's share: in one generation two members own the same partitions, and the others' go unread."""
    original = group_offsets.assignment_stored

    def assignment_stored(group: Any, pending: Any, *args: Any, **kwargs: Any) -> Any:
        first = min(pending.assignments)[1] if pending.assignments else b""
        shared = replace(pending, assignments=tuple((member, first) for member, _ in pending.assignments))
        return original(group, shared, *args, **kwargs)

    return [(group_offsets, "assignment_stored", assignment_stored)]


def _commit_stored_one_ahead() -> list[Patch]:
    """The group coordinator stores each committed offset one past the one the member asked for: a caught-up member's
    commit is past the log, and the member that resumes there after a rebalance skips a record."""
    original = offset_commit_api.commit_offsets

    def commit_offsets(group: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        entries = tuple(replace(entry, offset=entry.offset + 1) for entry in request.entries)
        return original(group, replace(request, entries=entries), *args, **kwargs)

    return [(offset_commit_api, "commit_offsets", commit_offsets)]


def _stable_offset_ignores_open_transactions() -> list[Patch]:
    """A partition's last stable offset is its high watermark, whatever transactions are still undecided below it: a
    read_committed consumer reads a transaction's records before its producer has asked to commit it, and those of
    transactions later aborted."""

    def last_stable_offset(self: LogTransactions, state: Any, high_watermark: int) -> int:
        return high_watermark

    return [(LogTransactions, "last_stable_offset", last_stable_offset)]


def _commit_marker_to_first_partition() -> list[Patch]:
    """The transaction coordinator has the COMMIT marker written to the first of a transaction's partitions only
    (and counts the transaction complete): the rest stay open at their leaders until a later marker of the same
    producer ends them, which may be an ABORT."""
    original = MarkerChannel.write

    async def write(self: MarkerChannel, marker: Any, partitions: Any, still_wanted: Any) -> bool:
        if marker.commit and partitions:
            partitions = frozenset([min(partitions, key=lambda p: (p.topic, p.partition))])
        return await original(self, marker, partitions, still_wanted)

    return [(MarkerChannel, "write", write)]


def _txn_offsets_applied_on_arrival() -> list[Patch]:
    """The group coordinator makes a TxnOffsetCommit's offsets the group's as soon as they are written, not at the
    transaction's COMMIT marker: an aborted transaction's offsets stay committed, and the records it consumed are
    never processed again."""
    original = GroupCoordinator.txn_commit_offsets

    async def txn_commit_offsets(self: GroupCoordinator, group_id: str, producer_id: int, *args: Any) -> Any:
        answer = await original(self, group_id, producer_id, *args)
        shard = self.runtime.shard_for(group_id)
        if answer[0] == ErrorCode.NONE and not isinstance(shard, ErrorCode):
            held = shard.txn_offsets.get(producer_id, {}).get(group_id, {})
            group = shard.groups.get(group_id) or Group(group_id)
            shard.groups[group_id] = group.evolve(offsets={**group.offsets, **held})
        return answer

    return [(GroupCoordinator, "txn_commit_offsets", txn_commit_offsets)]


def _txn_offset_commit_ignores_generation() -> list[Patch]:
    """The group coordinator takes a TxnOffsetCommit from any member of any generation: a zombie the group replaced
    commits the offsets of what it processed after the partition's new owner read the committed offsets and
    processed the same records."""
    original = group_coordinator.validate_offset_commit

    def validate_offset_commit(group: Any, request: Any, transactional: bool = False) -> ErrorCode:
        return ErrorCode.NONE if transactional else original(group, request, transactional)

    return [(group_coordinator, "validate_offset_commit", validate_offset_commit)]


def _cleaner_ignores_high_watermark() -> list[Patch]:
    """The log cleaner cleans every inactive segment, past the high watermark: a record is removed for a later one
    of its key that is not committed yet, and when a leader change truncates that one, the key's latest committed
    value is gone from the log that cleaned it."""

    def first_uncleanable_offset(log: Any, _now_ms: int) -> int:
        return int(log.segments[-1].base_offset)

    return [(cleaner_plan, "first_uncleanable_offset", first_uncleanable_offset)]


def _cleaner_ignores_delete_retention() -> list[Patch]:
    """The log cleaner removes a tombstone at the cleaning after the one that kept it, whatever delete.retention.ms
    says: a follower that had not fetched the tombstone yet never gets it, keeps the key's older value, and brings
    the deleted key back when it leads."""
    original = log_cleaner.filter_batch

    def filter_batch(
        batch: Any, latest: Any, now_ms: int, _delete_retention_ms: int, keep_empty: bool, aborted: bool = False
    ) -> Any:
        return original(batch, latest, now_ms, 0, keep_empty, aborted)

    return [(log_cleaner, "filter_batch", filter_batch)]


def _assigns_unreleased_partitions() -> list[Patch]:
    """A KIP-848 coordinator moves a member to its target with every new partition at once, without waiting for
    the members that still own some of them to revoke them: two members consume one partition."""
    original = consumer_group_reconciliation._next

    def next_assignment(member: Any, epoch: int, target_epoch: int, target: Any, _others: Any, owned: Any) -> Any:
        return original(member, epoch, target_epoch, target, NO_PARTITIONS, owned)

    return [(consumer_group_reconciliation, "_next", next_assignment)]


PLANTED_BUGS: dict[str, Callable[[], list[Patch]]] = {
    "leader-acks-before-replication": _leader_acks_before_replication,
    "raft-counts-unflushed": _raft_counts_unflushed,
    "new-leader-forgets-its-epoch": _new_leader_forgets_its_epoch,
    "controller-skips-cluster-min-isr": _controller_skips_cluster_min_isr,
    "isr-expansion-not-counted": _isr_expansion_not_counted,
    "isr-shrink-assumed": _isr_shrink_assumed,
    "rollback-on-unknown-outcome": _rollback_on_unknown_outcome,
    "unclean-shutdown-counted-clean": _unclean_shutdown_counted_clean,
    "leader-change-keeps-leader-epoch": _leader_change_keeps_leader_epoch,
    "partition-epoch-not-bumped": _partition_epoch_not_bumped,
    "raft-log-not-fsynced": _raft_log_not_fsynced,
    "sync-hands-one-assignment-to-all": _sync_hands_one_assignment_to_all,
    "commit-stored-one-ahead": _commit_stored_one_ahead,
    "stable-offset-ignores-open-transactions": _stable_offset_ignores_open_transactions,
    "commit-marker-to-first-partition": _commit_marker_to_first_partition,
    "txn-offsets-applied-on-arrival": _txn_offsets_applied_on_arrival,
    "txn-offset-commit-ignores-generation": _txn_offset_commit_ignores_generation,
    "assigns-unreleased-partitions": _assigns_unreleased_partitions,
    "cleaner-ignores-high-watermark": _cleaner_ignores_high_watermark,
    "cleaner-ignores-delete-retention": _cleaner_ignores_delete_retention,
}


@contextlib.contextmanager
def planted(name: str | None) -> Iterator[None]:
    if name is None:
        yield
        return
    if name not in PLANTED_BUGS:
        raise ValueError(f"unknown planted bug '{name}'; known: {', '.join(PLANTED_BUGS)}")
    patches = PLANTED_BUGS[name]()
    originals = [(owner, attribute, owner.__dict__[attribute]) for owner, attribute, _ in patches]
    for owner, attribute, replacement in patches:
        setattr(owner, attribute, replacement)
    try:
        yield
    finally:
        for owner, attribute, original in originals:
            setattr(owner, attribute, original)
