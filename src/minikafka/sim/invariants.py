"""The safety properties a simulated run is checked against after every step, on what the nodes hold.

- NoCommittedRecordLost: every record a producer had acknowledged with acks=all, once below the high watermark of
  the partition's current leader (readable), is in its log at the offset it was acknowledged at, with its value;
  at the end of a run every one of them is readable.
- OneLeaderPerLeaderEpoch: no two brokers lead a partition in the same leader epoch.
- LeaderCandidateCompleteness (as `analyze` names it): a new leader's log ends at or past every high watermark a
  leader of the partition had reached before it led, so it is caught when elected, before any follower truncates.
- NeverTwoLeadersInSameEpoch (Raft): no two controllers lead the metadata quorum in the same epoch.
- LeaderHasAllAckedValues (Raft): a committed metadata entry (below a leader's high watermark) stays in the log of
  every later leader, in the epoch it was committed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from minikafka.common.record_batch import iter_batches


@dataclass(frozen=True)
class Violation:
    invariant: str
    detail: str


@dataclass(frozen=True)
class Acknowledged:
    partition: int
    offset: int
    value: bytes


@dataclass(frozen=True)
class PartitionReplica:
    """What one broker holds of one partition now."""

    broker: int
    partition: int
    leads: bool
    leader_epoch: int
    high_watermark: int
    log_end_offset: int
    read: Callable[[int, int], dict[int, bytes]]  # the values of its log's records from one offset below another


@dataclass(frozen=True)
class RaftNode:
    node: int
    epoch: int
    leads: bool
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    epoch_at: Callable[[int], int]  # the epoch of the entry at an offset of its log


def records_between(data: bytes, start: int, end: int) -> dict[int, bytes]:
    """The values of the records at offsets in [start, end) of a read of a log."""
    values: dict[int, bytes] = {}
    for batch in iter_batches(data):
        if batch.last_offset < start:
            continue
        if batch.base_offset >= end:
            break
        for record in batch.records():
            if start <= record.offset < end:
                values[record.offset] = record.value or b""
    return values


@dataclass
class Invariants:
    acknowledged: dict[int, list[Acknowledged]] = field(default_factory=dict)  # by partition, in ack order
    partition_leaders: dict[tuple[int, int], int] = field(default_factory=dict)  # (partition, epoch) -> broker
    raft_leaders: dict[int, int] = field(default_factory=dict)  # epoch -> controller
    committed: dict[int, int] = field(default_factory=dict)  # metadata offset -> epoch of its committed entry
    _checked: dict[int, int] = field(default_factory=dict)  # partition -> acknowledgements checked in full
    high_watermarks: dict[int, int] = field(default_factory=dict)  # partition -> the highest HWM a leader reached

    def acknowledge(self, record: Acknowledged) -> None:
        self.acknowledged.setdefault(record.partition, []).append(record)

    def check(self, replicas: Iterable[PartitionReplica], raft: Iterable[RaftNode]) -> Violation | None:
        """Check every invariant on what the nodes hold now; the first one broken, if any."""
        return self._check_partitions(list(replicas)) or self._check_raft(list(raft))

    def _check_partitions(self, replicas: list[PartitionReplica]) -> Violation | None:
        leaders: dict[int, PartitionReplica] = {}
        for replica in replicas:
            if not replica.leads:
                continue
            key = (replica.partition, replica.leader_epoch)
            new_leader = key not in self.partition_leaders
            first = self.partition_leaders.setdefault(key, replica.broker)
            reached = self.high_watermarks.get(replica.partition, 0)
            if new_leader and replica.log_end_offset < reached:
                return Violation(
                    "LeaderCandidateCompleteness",
                    f"broker {replica.broker} leads partition {replica.partition} in leader epoch "
                    f"{replica.leader_epoch} with its log ending at {replica.log_end_offset}, below the high watermark "
                    f"{reached} an earlier leader had reached",
                )
            if first != replica.broker:
                return Violation(
                    "OneLeaderPerLeaderEpoch",
                    f"brokers {first} and {replica.broker} both led partition {replica.partition} in leader epoch "
                    f"{replica.leader_epoch}",
                )
            current = leaders.get(replica.partition)
            if current is None or replica.leader_epoch > current.leader_epoch:
                leaders[replica.partition] = replica
        for partition, leader in sorted(leaders.items()):
            violation = self._check_acknowledged(partition, leader, full=False)
            if violation is not None:
                return violation
        for replica in replicas:  # after the new leaders were checked: what was reached before they led
            if replica.leads and replica.high_watermark > self.high_watermarks.get(replica.partition, 0):
                self.high_watermarks[replica.partition] = replica.high_watermark
        return None

    def _check_acknowledged(self, partition: int, leader: PartitionReplica, full: bool) -> Violation | None:
        """The acknowledged records the leader lets consumers read (below its high watermark): those not checked
        yet (all of them when `full`), and the newest readable one always; at the end (`full`) all must be readable."""
        acked = self.acknowledged.get(partition, [])
        start = 0 if full else self._checked.get(partition, 0)
        end = start
        while end < len(acked) and acked[end].offset < leader.high_watermark:
            end += 1
        if full and end < len(acked):
            return Violation(
                "NoCommittedRecordLost",
                f"partition {partition}: offset {acked[end].offset} was acknowledged but its leader, broker "
                f"{leader.broker} in leader epoch {leader.leader_epoch}, never let it be read (high watermark "
                f"{leader.high_watermark})",
            )
        newest = [acked[end - 1]] if end > 0 and acked[end - 1].offset < leader.high_watermark else []
        checked = acked[start:end] + newest
        if not checked:
            return None
        low = min(record.offset for record in checked)
        values = leader.read(low, max(record.offset for record in checked) + 1)
        for record in checked:
            value = values.get(record.offset)
            if value != record.value:
                return Violation(
                    "NoCommittedRecordLost",
                    f"partition {partition}: broker {leader.broker}, leader in epoch {leader.leader_epoch} with high "
                    f"watermark {leader.high_watermark}, holds {value!r} at offset {record.offset}, where "
                    f"{record.value!r} was acknowledged",
                )
        self._checked[partition] = end
        return None

    def check_all_acknowledged(self, replicas: Iterable[PartitionReplica]) -> Violation | None:
        """The final read: every acknowledged record, on each partition's leader."""
        leaders: dict[int, PartitionReplica] = {}
        for replica in replicas:
            if replica.leads and (
                replica.partition not in leaders or replica.leader_epoch > leaders[replica.partition].leader_epoch
            ):
                leaders[replica.partition] = replica
        for partition in sorted(self.acknowledged):
            leader = leaders.get(partition)
            if leader is None:
                return Violation("NoCommittedRecordLost", f"partition {partition} has no leader at the end of the run")
            violation = self._check_acknowledged(partition, leader, full=True)
            if violation is not None:
                return violation
        return None

    def lost(self, replicas: Iterable[PartitionReplica]) -> int:
        """How many acknowledged records each partition's leader does not hold, readable, at its offset now."""
        leaders: dict[int, PartitionReplica] = {}
        for replica in replicas:
            if replica.leads and (
                replica.partition not in leaders or replica.leader_epoch > leaders[replica.partition].leader_epoch
            ):
                leaders[replica.partition] = replica
        missing = 0
        for partition, acked in self.acknowledged.items():
            leader = leaders.get(partition)
            if leader is None:
                missing += len(acked)
                continue
            values = leader.read(0, leader.high_watermark)
            missing += sum(1 for record in acked if values.get(record.offset) != record.value)
        return missing

    def _check_raft(self, nodes: list[RaftNode]) -> Violation | None:
        leader: RaftNode | None = None
        for node in nodes:
            if not node.leads:
                continue
            first = self.raft_leaders.setdefault(node.epoch, node.node)
            if first != node.node:
                return Violation(
                    "NeverTwoLeadersInSameEpoch", f"controllers {first} and {node.node} both led epoch {node.epoch}"
                )
            if leader is None or node.epoch > leader.epoch:
                leader = node
        if leader is None:
            return None
        for offset, epoch in self.committed.items():
            if offset < leader.log_start_offset:
                continue  # in a snapshot
            if offset >= leader.log_end_offset or leader.epoch_at(offset) != epoch:
                held = "nothing" if offset >= leader.log_end_offset else f"epoch {leader.epoch_at(offset)}"
                return Violation(
                    "LeaderHasAllAckedValues",
                    f"metadata offset {offset} was committed in epoch {epoch}; the leader, controller {leader.node} "
                    f"in epoch {leader.epoch}, holds {held} there",
                )
        newest = leader.high_watermark - 1
        if leader.log_start_offset <= newest < leader.log_end_offset and newest >= max(self.committed, default=-1):
            self.committed = {newest: leader.epoch_at(newest)}  # matching it there, a log matches below (Raft)
        return None
