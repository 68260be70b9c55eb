"""Preferred leader elections: ElectLeaders (kafka-leader-election) and the automatic rebalance
(auto.leader.rebalance.enable every leader.imbalance.check.interval.seconds)."""

from __future__ import annotations

from structlog.testing import capture_logs

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.requests import ElectionType, ElectLeadersRequest, TopicPartitionRef


def failed_over(harness):  # type: ignore[no-untyped-def]
    """Topic t on [1, 2, 3]; broker 1 is fenced (leadership moves to 2), returns, and rejoins the ISR."""
    for b in (1, 2, 3):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]])
    harness.advance(1001)
    for b in (2, 3):
        harness.heartbeat(b, harness.epoch(b))
    harness.tick()
    assert harness.partition(topic_id).leader == 2
    epoch = harness.start_broker(1)
    isr = [(2, harness.epoch(2)), (3, harness.epoch(3)), (1, epoch)]
    harness.commit(harness.controller.alter_partition(harness.alter_request(2, topic_id, isr)))
    assert set(harness.partition(topic_id).isr) == {1, 2, 3}
    return topic_id


def elect(harness, *refs: TopicPartitionRef, every: bool = False):  # type: ignore[no-untyped-def]
    request = ElectLeadersRequest(ElectionType.PREFERRED, None if every else refs)
    return harness.commit(harness.controller.elect_leaders(request))


def test_preferred_election_moves_leadership_back_and_bumps_the_leader_epoch(harness) -> None:  # type: ignore[no-untyped-def]
    topic_id = failed_over(harness)
    before = harness.partition(topic_id)
    with capture_logs() as logs:
        response = elect(harness, TopicPartitionRef("t", 0))
    assert [r.error_code for r in response.results] == [ErrorCode.NONE]
    after = harness.partition(topic_id)
    assert (after.leader, after.leader_epoch, after.isr) == (1, before.leader_epoch + 1, before.isr)
    [elected] = [e for e in logs if e["event"] == "leader_elected"]
    assert (elected["election_type"], elected["reason"], elected["previous_leader"]) == (
        "PREFERRED",
        "preferred_election",
        2,
    )
    again = elect(harness, TopicPartitionRef("t", 0))
    assert [r.error_code for r in again.results] == [ErrorCode.ELECTION_NOT_NEEDED]


def test_preferred_replica_out_of_the_isr_or_unknown_partition_is_refused(harness) -> None:  # type: ignore[no-untyped-def]
    for b in (1, 2, 3):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]])
    harness.advance(1001)
    for b in (2, 3):
        harness.heartbeat(b, harness.epoch(b))
    harness.tick()  # 1 fenced and out of the ISR
    before = harness.image
    response = elect(harness, TopicPartitionRef("t", 0), TopicPartitionRef("t", 5), TopicPartitionRef("nope", 0))
    assert [r.error_code for r in response.results] == [
        ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert harness.image == before and harness.partition(topic_id).leader == 2


def test_all_partitions_answers_only_those_that_needed_an_election(harness) -> None:  # type: ignore[no-untyped-def]
    # Kafka's ReplicationControlManager.electLeaders leaves ELECTION_NOT_NEEDED out when asked for all partitions.
    failed_over(harness)
    harness.create_topic("u", assignment=[[2, 3], [3, 1]])  # its preferred replicas lead
    response = elect(harness, every=True)
    assert [(r.topic, r.partition, r.error_code) for r in response.results] == [("t", 0, ErrorCode.NONE)]
    assert elect(harness, every=True).results == ()
    unclean = harness.controller.elect_leaders(ElectLeadersRequest(ElectionType.UNCLEAN, None))
    assert unclean.response.results == () and unclean.records == ()  # every partition has a leader


def test_auto_rebalance_runs_every_check_interval(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(leader_imbalance_check_interval_ms=5000)
    topic_id = failed_over(harness)  # at t=1001: before the first check
    harness.tick()
    assert harness.partition(topic_id).leader == 2  # not yet due
    harness.advance(4000)
    for b in (1, 2, 3):
        harness.heartbeat(b, harness.epoch(b))
    with capture_logs() as logs:
        harness.tick()
    assert harness.partition(topic_id).leader == 1
    assert [e["reason"] for e in logs if e["event"] == "leader_elected"] == ["auto_leader_rebalance"]


def test_auto_rebalance_off_leaves_leaders_where_they_are(make_harness) -> None:  # type: ignore[no-untyped-def]
    harness = make_harness(leader_imbalance_check_interval_ms=5000, auto_leader_rebalance_enable=False)
    topic_id = failed_over(harness)
    harness.advance(4000)
    for b in (1, 2, 3):
        harness.heartbeat(b, harness.epoch(b))
    harness.tick()
    assert harness.partition(topic_id).leader == 2
