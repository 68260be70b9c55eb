"""Unclean leader election: with no live ISR member, a live out-of-sync replica may lead, asked for with
ElectLeaders UNCLEAN or allowed by unclean.leader.election.enable; the ISR becomes just it and the partition is
RECOVERING until its leader reports RECOVERED through AlterPartition."""

from __future__ import annotations

from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.requests import ElectionType, ElectLeadersRequest, TopicPartitionRef
from minikafka.kraft_controller.metadata.records import NO_LEADER, LeaderRecoveryState


def silence(harness, *quiet: int) -> None:  # type: ignore[no-untyped-def]
    """Let `quiet` brokers' sessions expire while the others heartbeat, then tick (fences them)."""
    harness.advance(1001)
    for b, reg in harness.image.brokers.items():
        if b not in quiet and not reg.fenced:
            harness.heartbeat(b, reg.broker_epoch)
    harness.tick()


def leaderless_after_isr_shrank_to_1(harness, **configs: str):  # type: ignore[no-untyped-def]
    """RF 2 on [1, 2]: the ISR shrinks to {1} while 2 is down, then 1 dies too, and 2 comes back."""
    for b in (1, 2):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2]], **configs)
    silence(harness, 2)
    assert harness.partition(topic_id).isr == (1,)
    silence(harness, 1)
    harness.start_broker(2)
    return topic_id


def unclean(harness, topic: str = "t"):  # type: ignore[no-untyped-def]
    request = ElectLeadersRequest(ElectionType.UNCLEAN, (TopicPartitionRef(topic, 0),))
    return [r.error_code for r in harness.commit(harness.controller.elect_leaders(request)).results]


def test_without_unclean_election_the_partition_stays_leaderless_until_asked(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(eligible_leader_replicas_version=0)  # Kafka 3.x: the ISR keeps its last member
    topic_id = leaderless_after_isr_shrank_to_1(harness)
    p = harness.partition(topic_id)
    assert (p.leader, p.isr) == (NO_LEADER, (1,))  # 2 is back, but out of sync: not elected on its own
    with capture_logs() as logs:
        assert unclean(harness) == [ErrorCode.NONE]
    p = harness.partition(topic_id)
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), LeaderRecoveryState.RECOVERING)
    [elected] = [e for e in logs if e["event"] == "leader_elected"]
    assert (elected["unclean"], elected["election_type"], elected["leader"]) == (True, "UNCLEAN", 2)
    assert unclean(harness) == [ErrorCode.ELECTION_NOT_NEEDED]
    # The new leader's first AlterPartition reports the recovery done.
    epoch = harness.start_broker(1)
    request = harness.alter_request(2, topic_id, [(2, harness.epoch(2)), (1, epoch)])
    harness.commit(harness.controller.alter_partition(request))
    p = harness.partition(topic_id)
    assert (p.isr, p.leader_recovery_state) == ((2, 1), LeaderRecoveryState.RECOVERED)


def test_topic_config_elects_the_returning_replica_at_once(harness) -> None:  # type: ignore[no-untyped-def]
    topic_id = leaderless_after_isr_shrank_to_1(harness, **{"unclean.leader.election.enable": "true"})
    p = harness.partition(topic_id)
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), LeaderRecoveryState.RECOVERING)


def test_controller_default_applies_to_topics_without_their_own(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(unclean_leader_election_enable=True)
    topic_id = leaderless_after_isr_shrank_to_1(harness)
    assert harness.partition(topic_id).leader == 2
    off = make_harness(unclean_leader_election_enable=True)
    other = leaderless_after_isr_shrank_to_1(off, **{"unclean.leader.election.enable": "false"})
    assert off.partition(other).leader == NO_LEADER  # the topic's own setting wins


def test_no_live_replica_means_no_eligible_leader(harness) -> None:  # type: ignore[no-untyped-def]
    for b in (1, 2):
        harness.start_broker(b)
    harness.create_topic("t", assignment=[[1, 2]])
    silence(harness, 1, 2)
    assert unclean(harness) == [ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE]
    assert unclean(harness, "nope") == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
