"""Log divergence between a leader and a follower, pure: the leader's `diverging_epoch` answer to a Fetch and the
offset a follower truncates to on receiving it (Kafka's Fetch v12+ truncation, KIP-595's form of KIP-101/279).

The leader compares the follower's last fetched epoch with its own leader-epoch cache. The follower then cuts its
log to the lowest of the leader's end offset for that epoch, its own end offset for it and its log end. An answer
the leader could not define (-1) never cuts below the follower's fetch offset: a new leader that has not yet cached
its own epoch must not make a follower in the ISR throw away committed records.
"""

from __future__ import annotations

from dataclasses import dataclass

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1


@dataclass(frozen=True)
class EpochEndOffset:
    """The largest epoch at or below the one asked for, and the offset where it ends (Kafka's EpochEndOffset)."""

    epoch: int
    end_offset: int

    @property
    def undefined(self) -> bool:
        return self.end_offset == UNDEFINED_OFFSET


@dataclass(frozen=True)
class FollowerTruncation:
    """Where the follower cuts its log; `completed` False: the cut is intermediate, fetch again to learn more."""

    offset: int
    completed: bool
    reason: str


def diverging_epoch(leader_end: EpochEndOffset, last_fetched_epoch: int, fetch_offset: int) -> EpochEndOffset | None:
    """The leader's answer: None when the fetch continues its log, else the epoch and end offset to truncate to.

    `leader_end` is the leader's own end offset for `last_fetched_epoch` (its epoch cache's lookup).
    """
    if last_fetched_epoch < 0:
        return None
    if leader_end.epoch != last_fetched_epoch or leader_end.end_offset < fetch_offset:
        return leader_end
    return None


def follower_truncation(
    diverging: EpochEndOffset, local_end: EpochEndOffset, log_end_offset: int, fetch_offset: int
) -> FollowerTruncation:
    """The follower's cut for the leader's `diverging` answer (Kafka's getOffsetTruncationState).

    `local_end` is the follower's own end offset for `diverging.epoch` (undefined when its cache has nothing).
    """
    if diverging.undefined:
        return FollowerTruncation(min(fetch_offset, log_end_offset), True, "leader epoch end offset undefined")
    if diverging.epoch == UNDEFINED_EPOCH or local_end.undefined:
        return FollowerTruncation(min(diverging.end_offset, log_end_offset), True, "no local epoch to compare")
    if local_end.epoch != diverging.epoch:
        # We never had the leader's epoch: cut to where our largest earlier epoch ends, then ask again.
        return FollowerTruncation(min(local_end.end_offset, log_end_offset), False, "epoch unknown locally")
    offset = min(local_end.end_offset, diverging.end_offset, log_end_offset)
    return FollowerTruncation(offset, True, "diverging epoch")
