"""AlterPartition v3: every error path in Kafka's order, no-ops, and the KIP-903 race at the controller."""

from __future__ import annotations

import uuid

import pytest
from controller_harness import Harness
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.requests import AlterPartitionRequest, AlterPartitionTopic


@pytest.fixture
def cluster(harness: Harness) -> tuple[Harness, uuid.UUID]:
    """Brokers 1-4 unfenced; topic t: replicas [1, 2, 3], ISR [1, 2] (leader 1), partition epoch 1."""
    for b in (1, 2, 3, 4):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]])
    harness.commit(
        harness.controller.alter_partition(
            harness.alter_request(1, topic_id, [(1, harness.epoch(1)), (2, harness.epoch(2))])
        )
    )
    assert harness.partition(topic_id).isr == (1, 2)
    return harness, topic_id


def alter(harness: Harness, request: AlterPartitionRequest):  # type: ignore[no-untyped-def]
    with capture_logs() as logs:
        result = harness.controller.alter_partition(request)
    [partition] = result.response.topics[0].partitions
    return result, partition, logs


def rejected(logs: list[dict]) -> dict:  # type: ignore[type-arg]
    events = [e for e in logs if e["event"] == "alter_partition_rejected"]
    assert len(events) == 1, logs  # logged exactly once
    return events[0]


def test_accepted_expansion_bumps_partition_epoch_only(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    isr = [(b, h.epoch(b)) for b in (1, 2, 3)]
    result, partition, logs = alter(h, h.alter_request(1, topic_id, isr))
    assert partition.error_code is ErrorCode.NONE
    assert (partition.isr, partition.leader_id, partition.leader_epoch, partition.partition_epoch) == (
        (1, 2, 3),
        1,
        0,
        2,
    )
    h.commit(result)
    p = h.partition(topic_id)
    assert (p.isr, p.leader_epoch, p.partition_epoch) == ((1, 2, 3), 0, 2)  # the response is what commits
    assert [e["event"] for e in logs] == ["alter_partition_accepted"]


def test_no_op_answers_none_with_the_same_partition_epoch(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    result, partition, _ = alter(h, h.alter_request(1, topic_id, [(1, h.epoch(1)), (2, h.epoch(2))]))
    assert result.records == () and partition.error_code is ErrorCode.NONE and partition.partition_epoch == 1


def test_stale_requester_epoch_rejects_the_whole_request(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    request = h.alter_request(1, topic_id, [(1, h.epoch(1))], sender_epoch=h.epoch(1) - 1)
    with capture_logs() as logs, pytest.raises(KafkaError) as raised:
        h.controller.alter_partition(request)
    assert raised.value.code is ErrorCode.STALE_BROKER_EPOCH
    event = rejected(logs)
    assert (event["expected_broker_epoch"], event["actual_broker_epoch"]) == (h.epoch(1), h.epoch(1) - 1)


def test_unknown_topic_id_and_partition(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    base = h.alter_request(1, topic_id, [(1, h.epoch(1))])
    unknown_topic = AlterPartitionRequest(
        1, h.epoch(1), (AlterPartitionTopic(uuid.uuid4(), base.topics[0].partitions),)
    )
    _, partition, logs = alter(h, unknown_topic)
    assert partition.error_code is ErrorCode.UNKNOWN_TOPIC_ID and rejected(logs)["error"] == "UNKNOWN_TOPIC_ID"
    _, partition, logs = alter(
        h, h.alter_request(1, topic_id, [(1, h.epoch(1))], index=5, leader_epoch=0, partition_epoch=1)
    )
    assert partition.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize(
    ("leader_epoch", "partition_epoch", "error"),
    [
        (1, 1, ErrorCode.NOT_CONTROLLER),  # leader epoch from the future
        (0, 2, ErrorCode.NOT_CONTROLLER),  # partition epoch from the future
        (-1, 1, ErrorCode.FENCED_LEADER_EPOCH),
        (0, 0, ErrorCode.INVALID_UPDATE_VERSION),
    ],
)
def test_epoch_errors_log_expected_and_actual(
    cluster, leader_epoch: int, partition_epoch: int, error: ErrorCode
) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    request = h.alter_request(
        1, topic_id, [(1, h.epoch(1))], leader_epoch=leader_epoch, partition_epoch=partition_epoch
    )
    result, partition, logs = alter(h, request)
    assert partition.error_code is error and result.records == ()
    event = rejected(logs)
    assert event["error"] == error.name
    assert (event["expected_leader_epoch"], event["actual_leader_epoch"]) == (0, leader_epoch)
    assert (event["expected_partition_epoch"], event["actual_partition_epoch"]) == (1, partition_epoch)


def test_fenced_leader_epoch_wins_over_older_partition_epoch(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    _, partition, _ = alter(h, h.alter_request(1, topic_id, [(1, h.epoch(1))], leader_epoch=-1, partition_epoch=0))
    assert partition.error_code is ErrorCode.FENCED_LEADER_EPOCH


def test_sender_not_leader_is_invalid_request_before_partition_epoch(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    _, partition, logs = alter(h, h.alter_request(2, topic_id, [(2, h.epoch(2))], partition_epoch=0))
    assert partition.error_code is ErrorCode.INVALID_REQUEST
    event = rejected(logs)
    assert (event["why"], event["expected_leader"], event["actual_leader"]) == ("not_leader", 1, 2)


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([1, 4], "isr_not_subset_of_replicas"),
        ([1, 2, 2], "duplicate_isr_members"),
        ([2, 3], "isr_without_leader"),
        ([], "isr_without_leader"),
    ],
)
def test_malformed_isr_is_invalid_request(cluster, members: list[int], why: str) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    _, partition, logs = alter(h, h.alter_request(1, topic_id, [(b, h.epoch(b)) for b in members]))
    assert partition.error_code is ErrorCode.INVALID_REQUEST and rejected(logs)["why"] == why


def test_ineligible_members(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    # 3 in controlled shutdown
    h.heartbeat(3, h.epoch(3), want_shutdown=True)
    _, partition, logs = alter(h, h.alter_request(1, topic_id, [(1, h.epoch(1)), (2, h.epoch(2)), (3, h.epoch(3))]))
    assert partition.error_code is ErrorCode.INELIGIBLE_REPLICA
    [member] = rejected(logs)["ineligible_replicas"]
    assert (member["broker_id"], member["reason"]) == (3, "in_controlled_shutdown")


def test_ineligible_fenced_and_stale_epoch_members(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    h.heartbeat(3, h.epoch(3), want_fence=True)  # 3 fenced
    _, partition, logs = alter(h, h.alter_request(1, topic_id, [(1, h.epoch(1)), (2, h.epoch(2) - 1), (3, h.epoch(3))]))
    assert partition.error_code is ErrorCode.INELIGIBLE_REPLICA
    members = {m["broker_id"]: m for m in rejected(logs)["ineligible_replicas"]}
    assert members[2]["reason"] == "stale_broker_epoch"
    assert (members[2]["requested_broker_epoch"], members[2]["current_broker_epoch"]) == (h.epoch(2) - 1, h.epoch(2))
    assert members[3]["reason"] == "fenced"


def test_a_member_sent_with_epoch_minus_one_skips_the_epoch_check_but_not_fencing(cluster) -> None:  # type: ignore[no-untyped-def]
    """A leader that has had no Fetch from a member yet sends -1 for it (Kafka's brokerEpoch default)."""
    h, topic_id = cluster
    result, partition, _ = alter(h, h.alter_request(1, topic_id, [(1, h.epoch(1)), (2, -1), (3, h.epoch(3))]))
    assert partition.error_code is ErrorCode.NONE and partition.isr == (1, 2, 3)
    h.heartbeat(3, h.epoch(3), want_fence=True)
    _, partition, logs = alter(h, h.alter_request(1, topic_id, [(1, h.epoch(1)), (2, -1), (3, -1)]))
    assert partition.error_code is ErrorCode.INELIGIBLE_REPLICA
    assert [m["broker_id"] for m in rejected(logs)["ineligible_replicas"]] == [3]


def test_unregistered_replica_is_ineligible(harness: Harness) -> None:
    for b in (1, 2):
        harness.start_broker(b)
    harness.register(3)
    topic_id = harness.create_topic("t", assignment=[[1, 3]])
    _, partition, logs = alter(harness, harness.alter_request(1, topic_id, [(1, harness.epoch(1)), (9, 0)]))
    assert partition.error_code is ErrorCode.INVALID_REQUEST  # 9 is not even a replica: checked first
    _, partition, logs = alter(
        harness, harness.alter_request(1, topic_id, [(1, harness.epoch(1)), (3, harness.epoch(3))])
    )
    assert partition.error_code is ErrorCode.INELIGIBLE_REPLICA
    assert rejected(logs)["ineligible_replicas"][0]["reason"] == "fenced"


def test_shrink_to_leader_is_accepted(cluster) -> None:  # type: ignore[no-untyped-def]
    h, topic_id = cluster
    result, partition, _ = alter(h, h.alter_request(1, topic_id, [(1, h.epoch(1))]))
    assert partition.isr == (1,) and partition.partition_epoch == 2 and partition.leader_epoch == 0


# ---- KIP-903's six steps, at the controller ----


def kip_903_race(h: Harness) -> tuple[uuid.UUID, AlterPartitionRequest]:
    """Partition with replicas A=1, B=2; ISR [A]. Returns the delayed AlterPartition and leaves B re-registered."""
    epoch_a = h.start_broker(1)
    epoch_b = h.start_broker(2)
    topic_id = h.create_topic("t", assignment=[[1, 2]])
    h.commit(h.controller.alter_partition(h.alter_request(1, topic_id, [(1, epoch_a)])))
    assert h.partition(topic_id).isr == (1,)
    # 1. B catches up; A builds AlterPartition adding B with the epoch B fetched with.
    delayed = h.alter_request(1, topic_id, [(1, epoch_a), (2, epoch_b)])
    # 2. Before it arrives, B fails hard. 3. The controller fences B (no partition change: B is not in the ISR).
    before = h.partition(topic_id)
    h.advance(1001)
    h.heartbeat(1, epoch_a)
    assert [type(r).__name__ for r in h.tick()] == ["FenceBroker"]
    assert h.partition(topic_id) == before
    # 4. B restarts with an empty disk. 5. (New) controller sees its registration first; B catches up, unfenced.
    h.controller.on_become_active(h.now_ms)
    new_epoch_b = h.register(2)
    assert new_epoch_b > epoch_b
    assert not h.heartbeat(2, new_epoch_b).is_fenced
    return topic_id, delayed


def test_kip_903_stale_alter_partition_is_rejected_with_ineligible_replica(harness: Harness) -> None:
    topic_id, delayed = kip_903_race(harness)
    # 6. The delayed AlterPartition arrives.
    result, partition, logs = alter(harness, delayed)
    assert partition.error_code is ErrorCode.INELIGIBLE_REPLICA and result.records == ()
    [member] = rejected(logs)["ineligible_replicas"]
    assert member == {
        "broker_id": 2,
        "reason": "stale_broker_epoch",
        "requested_broker_epoch": delayed.topics[0].partitions[0].new_isr_with_epochs[1].broker_epoch,
        "current_broker_epoch": harness.epoch(2),
    }
    assert harness.partition(topic_id).isr == (1,)


def test_kip_903_alter_partition_with_current_epoch_is_accepted(harness: Harness) -> None:
    topic_id, _ = kip_903_race(harness)
    fresh = harness.alter_request(1, topic_id, [(1, harness.epoch(1)), (2, harness.epoch(2))])
    result, partition, _ = alter(harness, fresh)
    assert partition.error_code is ErrorCode.NONE
    harness.commit(result)
    assert harness.partition(topic_id).isr == (1, 2)


def test_kip_903_with_the_check_off_the_stale_request_gets_in(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(alter_partition_broker_epoch_check=False)
    topic_id, delayed = kip_903_race(harness)
    result, partition, _ = alter(harness, delayed)
    assert partition.error_code is ErrorCode.NONE  # the bug: an empty replica joins the ISR
    harness.commit(result)
    assert harness.partition(topic_id).isr == (1, 2)


def test_kip_903_check_off_still_rejects_fenced_members(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(alter_partition_broker_epoch_check=False)
    epoch_a = harness.start_broker(1)
    epoch_b = harness.start_broker(2)
    topic_id = harness.create_topic("t", assignment=[[1, 2]])
    harness.commit(harness.controller.alter_partition(harness.alter_request(1, topic_id, [(1, epoch_a)])))
    harness.advance(1001)
    harness.heartbeat(1, epoch_a)
    harness.tick()  # B's session expired: fenced
    harness.register(2)  # B re-registered but still fenced (not caught up)
    _, partition, _ = alter(harness, harness.alter_request(1, topic_id, [(1, epoch_a), (2, epoch_b)]))
    assert partition.error_code is ErrorCode.INELIGIBLE_REPLICA


def stale_isr_race(h: Harness) -> tuple[uuid.UUID, AlterPartitionRequest]:
    """Replicas [1, 2, 3], ISR [1, 2] at partition epoch 1: leader 1 proposes adding 3 (partition epoch 1), then,
    before that request arrives, its next one shrinks the ISR to [1] (partition epoch 2, same leader epoch)."""
    for b in (1, 2, 3):
        h.start_broker(b)
    topic_id = h.create_topic("t", assignment=[[1, 2, 3]])
    h.commit(h.controller.alter_partition(h.alter_request(1, topic_id, [(1, h.epoch(1)), (2, h.epoch(2))])))
    delayed = h.alter_request(1, topic_id, [(1, h.epoch(1)), (2, h.epoch(2)), (3, h.epoch(3))], partition_epoch=1)
    h.commit(h.controller.alter_partition(h.alter_request(1, topic_id, [(1, h.epoch(1))], partition_epoch=1)))
    assert (h.partition(topic_id).partition_epoch, h.partition(topic_id).leader_epoch) == (2, 0)
    return topic_id, delayed


def test_partition_epoch_check_is_on_by_default(make_harness) -> None:  # type: ignore[no-untyped-def]
    assert ControlConfig().alter_partition_partition_epoch_check is True
    harness = make_harness()
    topic_id, delayed = stale_isr_race(harness)
    result, partition, logs = alter(harness, delayed)
    assert partition.error_code is ErrorCode.INVALID_UPDATE_VERSION and result.records == ()
    assert (rejected(logs)["expected_partition_epoch"], rejected(logs)["actual_partition_epoch"]) == (2, 1)
    assert harness.partition(topic_id).isr == (1,)


def test_partition_epoch_check_off_lets_the_stale_isr_in(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(alter_partition_partition_epoch_check=False)
    topic_id, delayed = stale_isr_race(harness)
    result, partition, _ = alter(harness, delayed)
    assert partition.error_code is ErrorCode.NONE  # computed against partition epoch 1, applied over epoch 2
    harness.commit(result)
    assert harness.partition(topic_id).isr == (1, 2, 3) and harness.partition(topic_id).partition_epoch == 3
