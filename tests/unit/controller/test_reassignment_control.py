"""Partition reassignment (KIP-455, KRaft form): adding and removing replicas in the partition, completion once every
target replica is in the ISR (leader epoch bumped, a removed leader replaced), cancellation, and bad input."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.requests import AlterPartitionReassignmentsRequest, ReassignablePartition


def reassign(harness, *items: tuple[str, int, tuple[int, ...] | None]):  # type: ignore[no-untyped-def]
    request = AlterPartitionReassignmentsRequest(tuple(ReassignablePartition(*item) for item in items))
    return [r.error_code for r in harness.commit(harness.controller.alter_partition_reassignments(request)).results]


def four_brokers(harness):  # type: ignore[no-untyped-def]
    for b in (1, 2, 3, 4):
        harness.start_broker(b)
    return harness.create_topic("t", assignment=[[1, 2, 3]])


def join_isr(harness, topic_id, leader: int, isr: list[int]) -> None:  # type: ignore[no-untyped-def]
    request = harness.alter_request(leader, topic_id, [(b, harness.epoch(b)) for b in isr])
    harness.commit(harness.controller.alter_partition(request))


def test_reassignment_adds_then_completes_once_every_target_is_in_the_isr(harness) -> None:  # type: ignore[no-untyped-def]
    topic_id = four_brokers(harness)
    with capture_logs() as logs:
        assert reassign(harness, ("t", 0, (1, 2, 4))) == [ErrorCode.NONE]
    p = harness.partition(topic_id)
    assert (p.replicas, p.adding_replicas, p.removing_replicas, p.isr) == ((1, 2, 4, 3), (4,), (3,), (1, 2, 3))
    assert p.leader_epoch == 0  # nothing removed yet
    [started] = [e for e in logs if e["event"] == "reassignment_started"]
    assert (started["adding"], started["removing"]) == ([4], [3])
    [ongoing] = harness.controller.list_partition_reassignments().reassignments
    assert (ongoing.topic, ongoing.partition, ongoing.adding_replicas, ongoing.removing_replicas) == (
        "t",
        0,
        (4,),
        (3,),
    )
    with capture_logs() as logs:
        join_isr(harness, topic_id, 1, [1, 2, 3, 4])
    p = harness.partition(topic_id)
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ((1, 2, 4), (1, 2, 4), (), ())
    assert (p.leader, p.leader_epoch) == (1, 1)  # same leader, epoch bumped: 3's fetches are fenced
    [done] = [e for e in logs if e["event"] == "reassignment_completed"]
    assert (done["replicas"], done["removed"], done["added"]) == ([1, 2, 4], [3], [4])
    assert harness.controller.list_partition_reassignments().reassignments == ()


def test_a_removed_leader_is_replaced_at_completion(harness) -> None:  # type: ignore[no-untyped-def]
    topic_id = four_brokers(harness)
    reassign(harness, ("t", 0, (4, 2, 3)))
    join_isr(harness, topic_id, 1, [1, 2, 3, 4])
    p = harness.partition(topic_id)
    assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ((4, 2, 3), (2, 3, 4), 4, 1)


def test_a_shrink_completes_at_once_and_cancel_reverts(harness) -> None:  # type: ignore[no-untyped-def]
    topic_id = four_brokers(harness)
    reassign(harness, ("t", 0, (1, 2)))
    p = harness.partition(topic_id)
    assert (p.replicas, p.isr, p.leader_epoch, p.adding_replicas) == ((1, 2), (1, 2), 1, ())
    reassign(harness, ("t", 0, (1, 2, 4)))
    with capture_logs() as logs:
        assert reassign(harness, ("t", 0, None)) == [ErrorCode.NONE]
    p = harness.partition(topic_id)
    assert (p.replicas, p.isr, p.adding_replicas, p.removing_replicas) == ((1, 2), (1, 2), (), ())
    assert [e["event"] for e in logs if e["event"].startswith("reassignment")] == ["reassignment_cancelled"]
    assert reassign(harness, ("t", 0, None)) == [ErrorCode.NO_REASSIGNMENT_IN_PROGRESS]


def test_a_dead_replica_is_moved_off(harness) -> None:  # type: ignore[no-untyped-def]
    topic_id = four_brokers(harness)
    harness.advance(1001)
    for b in (1, 2, 4):
        harness.heartbeat(b, harness.epoch(b))
    harness.tick()  # 3 fenced: out of the ISR
    reassign(harness, ("t", 0, (1, 2, 4)))
    join_isr(harness, topic_id, 1, [1, 2, 4])
    p = harness.partition(topic_id)
    assert (p.replicas, p.isr, p.leader, p.removing_replicas) == ((1, 2, 4), (1, 2, 4), 1, ())


@pytest.mark.parametrize(
    ("item", "error"),
    [
        (("t", 0, (1, 2, 9)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # unregistered broker
        (("t", 0, (1, 2, 2)), ErrorCode.INVALID_REPLICA_ASSIGNMENT),  # duplicate
        (("t", 0, ()), ErrorCode.INVALID_REPLICA_ASSIGNMENT),
        (("nope", 0, (1, 2, 3)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        (("t", 4, (1, 2, 3)), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    ],
)
def test_bad_reassignments_are_refused(harness, item, error: ErrorCode) -> None:  # type: ignore[no-untyped-def]
    four_brokers(harness)
    before = harness.image
    with capture_logs() as logs:
        assert reassign(harness, item) == [error]
    assert harness.image == before
    assert [e["error"] for e in logs if e["event"] == "reassignment_rejected"] == [error.name]


@pytest.mark.parametrize("unclean", [False, True])
def test_cancelling_when_only_adding_replicas_are_in_sync_needs_unclean_leader_election(harness, unclean: bool) -> None:  # type: ignore[no-untyped-def]
    # Kafka's cancelPartitionReassignment: the reverted ISR is the first original replica, an unclean election,
    # allowed only where unclean.leader.election.enable holds.
    for b in (1, 2, 3, 4, 5):
        harness.start_broker(b)
    configs = {"unclean.leader.election.enable": "true"} if unclean else {}
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]], **configs)
    reassign(harness, ("t", 0, (4, 5)))
    join_isr(harness, topic_id, 1, [1, 2, 3, 4])
    harness.advance(1001)
    for b in (4, 5):
        harness.heartbeat(b, harness.epoch(b))
    harness.tick()  # 1, 2 and 3 fenced: only the adding 4 is in sync
    p = harness.partition(topic_id)
    assert (p.isr, p.leader, p.adding_replicas) == ((4,), 4, (4, 5))
    harness.start_broker(1)
    request = AlterPartitionReassignmentsRequest((ReassignablePartition("t", 0, None),))
    result = harness.commit(harness.controller.alter_partition_reassignments(request))
    p = harness.partition(topic_id)
    if not unclean:
        [refused] = result.results
        assert refused.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert "would require an unclean leader election" in refused.error_message
        assert p.adding_replicas == (4, 5)
        return
    assert [r.error_code for r in result.results] == [ErrorCode.NONE]
    assert (p.replicas, p.isr, p.leader, p.adding_replicas, p.removing_replicas) == ((1, 2, 3), (1,), 1, (), ())
