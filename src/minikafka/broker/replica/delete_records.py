"""DeleteRecords on a partition's leader (Kafka's Partition.deleteRecordsOnLeader): which offset the log start moves
to, or why it cannot. Pure: the requested offset and the leader's high watermark in, a decision out."""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.errors import ErrorCode

HIGH_WATERMARK = -1  # DeleteRecordsRequest.HIGH_WATERMARK: delete everything below the high watermark


@dataclass(frozen=True)
class DeletionTarget:
    error: ErrorCode
    offset: int = -1  # the new log start offset, when error is NONE
    message: str | None = None


def deletion_target(requested: int, high_watermark: int, partition: str) -> DeletionTarget:
    """A log start never passes the high watermark: records not yet committed cannot be deleted."""
    offset = high_watermark if requested == HIGH_WATERMARK else requested
    if offset < 0:
        return DeletionTarget(
            ErrorCode.OFFSET_OUT_OF_RANGE, message=f"The offset {offset} for partition {partition} is not valid"
        )
    if offset > high_watermark:
        return DeletionTarget(
            ErrorCode.OFFSET_OUT_OF_RANGE,
            message=f"Cannot increment the log start offset to {offset} of partition {partition} since it is larger "
            f"than the high watermark {high_watermark}",
        )
    return DeletionTarget(ErrorCode.NONE, offset)


def low_watermark(leader_log_start: int, follower_log_starts: dict[int, int], alive_followers: list[int]) -> int:
    """Kafka's lowWatermarkIfLeader: the lowest log start over the leader and its followers on live brokers (a
    follower not heard from yet counts as -1, so a deletion waits for its first Fetch)."""
    return min([leader_log_start, *(follower_log_starts.get(f, -1) for f in alive_followers)])
