"""Registration, broker epochs, heartbeats, session-timeout fencing, controlled shutdown, failover."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.kraft_controller.control.requests import BrokerHeartbeatRequest, BrokerRegistrationRequest
from minikafka.kraft_controller.metadata.records import (
    NO_LEADER,
    BrokerStatus,
    FenceBroker,
    RegisterBroker,
    UnfenceBroker,
)


def test_registration_epoch_is_record_offset_and_broker_starts_fenced(harness) -> None:  # type: ignore[no-untyped-def]
    harness.start_broker(1)
    epoch = harness.register(2)
    assert epoch == harness.committed[-1][0]
    assert isinstance(harness.committed[-1][1], RegisterBroker)
    assert harness.image.broker(2).status is BrokerStatus.FENCED


def test_same_incarnation_registering_again_writes_a_record_and_gets_a_new_epoch(harness) -> None:  # type: ignore[no-untyped-def]
    # Answered from its own committed record: an answer from state a failover can lose would leave the broker
    # heartbeating with an epoch no controller knows.
    epoch = harness.start_broker(1)
    start = harness.next_offset
    again = harness.register(1, "b1-i1")
    assert [type(r) for _, r in harness.committed[start:]] == [FenceBroker, RegisterBroker]
    assert again > epoch and harness.image.broker(1).broker_epoch == again
    assert harness.image.broker(1).status is BrokerStatus.FENCED


def test_new_incarnation_while_session_live_is_duplicate(harness) -> None:  # type: ignore[no-untyped-def]
    harness.start_broker(1)
    harness.advance(500)
    with capture_logs() as logs, pytest.raises(KafkaError) as raised:
        harness.controller.register_broker(BrokerRegistrationRequest(1, "other"), harness.now_ms)
    assert raised.value.code is ErrorCode.DUPLICATE_BROKER_REGISTRATION
    [event] = [e for e in logs if e["event"] == "broker_registration_rejected"]
    assert event["expected_incarnation_id"] == "b1-i1" and event["actual_incarnation_id"] == "other"
    assert event["session_expires_in_ms"] == 500


def test_new_incarnation_after_session_expiry_fences_old_and_gets_new_epoch(harness) -> None:  # type: ignore[no-untyped-def]
    old = harness.start_broker(1)
    harness.advance(1001)  # expired, but no tick yet: registration fences the old incarnation itself
    start = harness.next_offset
    new = harness.register(1)
    kinds = [type(r) for _, r in harness.committed[start:]]
    assert kinds == [FenceBroker, RegisterBroker]
    assert new > old and harness.image.broker(1).broker_epoch == new
    assert harness.image.broker(1).incarnation_id == "b1-i2"


def test_new_incarnation_after_fence_by_timeout(harness) -> None:  # type: ignore[no-untyped-def]
    old = harness.start_broker(1)
    harness.advance(1001)
    assert [type(r) for r in harness.tick()] == [FenceBroker]
    new = harness.register(1)
    assert new > old
    with pytest.raises(KafkaError) as raised:
        harness.heartbeat(1, old)
    assert raised.value.code is ErrorCode.STALE_BROKER_EPOCH


def test_heartbeat_with_stale_or_unknown_epoch_is_rejected_and_logged(harness) -> None:  # type: ignore[no-untyped-def]
    epoch = harness.start_broker(1)
    for broker_id, sent in [(1, epoch - 1), (9, 0)]:
        with capture_logs() as logs, pytest.raises(KafkaError) as raised:
            harness.controller.broker_heartbeat(BrokerHeartbeatRequest(broker_id, sent, 100), harness.now_ms)
        assert raised.value.code is ErrorCode.STALE_BROKER_EPOCH
        [event] = logs
        assert event["event"] == "broker_heartbeat_rejected" and event["actual_broker_epoch"] == sent
    assert logs[0]["expected_broker_epoch"] is None


def test_unfenced_only_once_metadata_reaches_registration(harness) -> None:  # type: ignore[no-untyped-def]
    epoch = harness.register(1)
    behind = harness.heartbeat(1, epoch, metadata_offset=epoch - 1)
    assert behind.is_fenced and not behind.is_caught_up
    assert harness.image.broker(1).fenced
    caught_up = harness.heartbeat(1, epoch, metadata_offset=epoch)
    assert not caught_up.is_fenced and caught_up.is_caught_up
    assert isinstance(harness.committed[-1][1], UnfenceBroker)
    assert harness.heartbeat(1, epoch).is_fenced is False and harness.committed[-1][1].__class__ is UnfenceBroker


def test_want_fence_keeps_broker_fenced(harness) -> None:  # type: ignore[no-untyped-def]
    epoch = harness.register(1)
    assert harness.heartbeat(1, epoch, want_fence=True).is_fenced
    epoch2 = harness.start_broker(2)
    assert harness.heartbeat(2, epoch2, want_fence=True).is_fenced
    assert harness.image.broker(2).fenced


def test_session_timeout_fences_only_silent_brokers_one_a_tick_longest_silent_first(harness) -> None:  # type: ignore[no-untyped-def]
    # As Kafka's maybeFenceOneStaleBroker: each fencing (a change over every partition of the broker) is its own
    # write, seen before the next is generated.
    epochs = {b: harness.start_broker(b) for b in (1, 2, 3)}
    harness.advance(300)
    harness.heartbeat(2, epochs[2])
    harness.advance(300)
    harness.heartbeat(1, epochs[1])
    harness.advance(701)  # 2 silent for 1001 ms and 3 for 1301 ms, both > 1000
    with capture_logs() as logs:
        assert harness.tick_once() == (FenceBroker(3, epochs[3], "session_timeout"),)
        assert harness.tick_once() == (FenceBroker(2, epochs[2], "session_timeout"),)
    assert [e["broker_id"] for e in logs if e["event"] == "broker_session_expired"] == [3, 2]
    assert not harness.image.broker(1).fenced
    assert harness.tick_once() == ()  # fenced brokers are not fenced again


def test_session_exactly_at_timeout_is_still_live(harness) -> None:  # type: ignore[no-untyped-def]
    harness.start_broker(1)
    harness.advance(1000)
    assert harness.tick() == ()
    harness.advance(1)
    assert len(harness.tick()) == 1


def test_failover_resets_every_broker_last_contact(harness) -> None:  # type: ignore[no-untyped-def]
    harness.start_broker(1)
    harness.advance(5000)
    harness.controller.on_become_active(harness.now_ms)  # a new active controller: fresh sessions
    harness.advance(1000)
    assert harness.tick() == ()
    harness.advance(1)
    assert [type(r) for r in harness.tick()] == [FenceBroker]


def test_controlled_shutdown_moves_leadership_before_fencing(harness) -> None:  # type: ignore[no-untyped-def]
    epochs = {b: harness.start_broker(b) for b in (1, 2, 3)}
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3], [2, 1, 3], [1, 3, 2]])
    first = harness.heartbeat(1, epochs[1], want_shutdown=True)
    assert not first.should_shutdown and not first.is_fenced
    assert harness.image.broker(1).in_controlled_shutdown
    for index in range(3):
        p = harness.partition(topic_id, index)
        assert p.leader != 1 and 1 not in p.isr
    assert harness.partition(topic_id, 0).leader == 2 and harness.partition(topic_id, 2).leader == 3
    for broker_id in (2, 3):  # the new leaders have replayed the moves
        harness.heartbeat(broker_id, epochs[broker_id])
    final = harness.heartbeat(1, epochs[1], want_shutdown=True)
    assert final.should_shutdown and final.is_fenced
    assert harness.image.broker(1).fenced
    # clean shutdown ended the session: the next incarnation registers at once
    assert harness.register(1) > epochs[1]


def test_controlled_shutdown_of_last_replica_standing_leaves_partition_leaderless(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(eligible_leader_replicas_version=0)  # Kafka 3.x: the last ISR member stays
    epoch = harness.start_broker(1)
    harness.start_broker(2)
    topic_id = harness.create_topic("t", assignment=[[1, 2]])
    harness.commit(harness.controller.alter_partition(harness.alter_request(1, topic_id, [(1, epoch)])))
    harness.heartbeat(1, epoch, want_shutdown=True)
    p = harness.partition(topic_id)
    assert (p.leader, p.isr) == (NO_LEADER, (1,))
    harness.heartbeat(2, harness.image.broker(2).broker_epoch)
    assert harness.heartbeat(1, epoch, want_shutdown=True).should_shutdown


def test_controlled_shutdown_is_granted_only_once_the_active_brokers_replayed_the_leadership_moves(harness) -> None:  # type: ignore[no-untyped-def]
    epochs = {b: harness.start_broker(b) for b in (1, 2, 3)}
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]])
    harness.heartbeat(1, epochs[1], want_shutdown=True)
    assert harness.partition(topic_id).leader == 2
    moved_at = harness.next_offset - 1  # the last record of the shutdown: the leadership move
    harness.heartbeat(2, epochs[2], metadata_offset=moved_at)  # the new leader knows it leads
    harness.heartbeat(3, epochs[3], metadata_offset=moved_at - 1)  # broker 3 does not yet
    with capture_logs() as logs:
        waiting = harness.heartbeat(1, epochs[1], want_shutdown=True)
    assert not waiting.should_shutdown and not waiting.is_fenced
    [event] = [e for e in logs if e["event"] == "controlled_shutdown_awaiting_metadata"]
    assert event["expected_lowest_active_offset"] == moved_at and event["actual_lowest_active_offset"] == moved_at - 1
    harness.heartbeat(3, epochs[3], metadata_offset=moved_at)
    granted = harness.heartbeat(1, epochs[1], want_shutdown=True)
    assert granted.should_shutdown and granted.is_fenced


def test_fenced_broker_asking_to_shut_down_is_told_at_once(harness) -> None:  # type: ignore[no-untyped-def]
    epoch = harness.register(1)
    response = harness.heartbeat(1, epoch, metadata_offset=-1, want_shutdown=True)
    assert response.should_shutdown and response.is_fenced


def test_describe_cluster(harness) -> None:  # type: ignore[no-untyped-def]
    harness.start_broker(1)
    harness.register(2)
    described = harness.controller.describe_cluster()
    assert described.records == ()
    assert [(b.broker_id, b.fenced) for b in described.response.brokers] == [(1, False), (2, True)]
    assert described.response.metadata_offset == harness.next_offset - 1


def test_invalid_registration_is_rejected(harness) -> None:  # type: ignore[no-untyped-def]
    with capture_logs() as logs, pytest.raises(KafkaError) as raised:
        harness.controller.register_broker(BrokerRegistrationRequest(-1, "x"), 0)
    assert raised.value.code is ErrorCode.INVALID_REQUEST and logs[0]["event"] == "broker_registration_rejected"


def test_a_heartbeat_with_offline_log_dirs_fences_the_broker_and_moves_its_leaderships(harness) -> None:  # type: ignore[no-untyped-def]
    epochs = {b: harness.start_broker(b) for b in (1, 2, 3)}
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3], [2, 1, 3]])
    with capture_logs() as events:
        answer = harness.heartbeat(1, epochs[1], offline_log_dirs=("/data/1",))
    assert answer.is_fenced and harness.image.broker(1).fenced
    for index in range(2):
        p = harness.partition(topic_id, index)
        assert p.leader != 1 and 1 not in p.isr
    (offline,) = [e for e in events if e["event"] == "broker_log_dirs_offline"]
    assert offline["broker_id"] == 1 and offline["log_dirs"] == ["/data/1"]
    fence = [r for _, r in harness.committed if isinstance(r, FenceBroker)][-1]
    assert fence.reason == "offline_log_dirs"
    # Caught up or not, a broker with no online log dir is never unfenced again.
    assert harness.heartbeat(1, epochs[1], offline_log_dirs=("/data/1",)).is_fenced
