"""KIP-966 Eligible Leader Replicas in the pure controller: who joins and leaves the ELR, the election order (ISR,
then an unfenced ELR member, then the last known leader), the unclean-shutdown rule (KAFKA-15586 / KAFKA-18106),
and eligible.leader.replicas.version 0 as Kafka 3.x."""

from __future__ import annotations

import uuid

from controller_harness import Harness
from structlog.testing import capture_logs

from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.controller_state_machine import feature_records
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    NO_LEADER,
    FeatureLevel,
    LeaderRecoveryState,
    Partition,
    PartitionChange,
    decode_record,
    encode_record,
)


def fence(harness: Harness, *quiet: int) -> None:
    """Let the `quiet` brokers' sessions expire while the others heartbeat, then tick (fences them)."""
    harness.advance(1001)
    for b, reg in harness.image.brokers.items():
        if b not in quiet and not reg.fenced:
            harness.heartbeat(b, reg.broker_epoch)
    harness.tick()


def state(harness: Harness, topic_id: uuid.UUID) -> tuple:  # type: ignore[type-arg]
    p = harness.partition(topic_id)
    return p.leader, p.isr, p.elr, p.last_known_elr


def last_replica_standing(harness: Harness) -> uuid.UUID:
    """RF 3, min ISR 2, leader 1: 3 and then 2 go away, then the leader alone goes too."""
    for b in (1, 2, 3):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]], **{"min.insync.replicas": "2"})
    fence(harness, 3)
    assert state(harness, topic_id) == (1, (1, 2), (), ())  # at min ISR: no ELR
    fence(harness, 3, 2)
    assert state(harness, topic_id) == (1, (1,), (2,), ())  # 2 left an ISR below min ISR
    fence(harness, 3, 2, 1)
    return topic_id


def rejoin(harness: Harness, broker_id: int, clean: bool) -> None:
    """A new incarnation registers (naming its last epoch only after a clean shutdown) and catches up."""
    previous = harness.epoch(broker_id) if clean else -1
    epoch = harness.register(broker_id, previous_broker_epoch=previous)
    harness.heartbeat(broker_id, epoch)


def make(**config: object) -> Harness:
    return Harness(ControlConfig(session_timeout_ms=1000, **config))  # type: ignore[arg-type]


def test_the_isr_empties_into_the_elr_and_remembers_the_last_leader() -> None:
    harness = make()
    topic_id = last_replica_standing(harness)
    assert state(harness, topic_id) == (NO_LEADER, (), (1, 2), (1,))


def test_a_cleanly_restarted_elr_member_leads_and_the_unclean_leader_does_not() -> None:
    harness = make()
    topic_id = last_replica_standing(harness)
    with capture_logs() as logs:
        rejoin(harness, 1, clean=False)  # the leader lost its unflushed tail: out of the ELR
    assert state(harness, topic_id) == (NO_LEADER, (), (2,), (1,))  # 2 is in the ELR: no last-leader election
    [detected] = [e for e in logs if e["event"] == "broker_shutdown_detected"]
    assert (detected["broker_id"], detected["clean"], detected["actual_previous_broker_epoch"]) == (1, False, -1)
    rejoin(harness, 2, clean=True)
    p = harness.partition(topic_id)
    assert state(harness, topic_id) == (2, (2,), (), ())  # elected from the ELR; it leaves the ELR for the ISR
    assert p.leader_recovery_state is LeaderRecoveryState.RECOVERED


def test_the_isr_back_at_min_isr_clears_the_elr() -> None:
    harness = make()
    topic_id = last_replica_standing(harness)
    rejoin(harness, 2, clean=True)
    assert state(harness, topic_id) == (2, (2,), (1,), ())  # 1 stays eligible: it left an ISR below min ISR
    rejoin(harness, 3, clean=True)
    harness.commit(harness.controller.alter_partition(harness.alter_request(2, topic_id, [(2, -1), (3, -1)])))
    assert state(harness, topic_id) == (2, (2, 3), (), ())


def test_the_last_known_leader_leads_once_the_isr_and_elr_are_empty() -> None:
    harness = make()
    topic_id = last_replica_standing(harness)
    rejoin(harness, 2, clean=False)
    assert state(harness, topic_id) == (NO_LEADER, (), (1,), (1,))  # 2 lost its ELR place; 1 is still fenced
    rejoin(harness, 1, clean=False)
    p = harness.partition(topic_id)
    assert state(harness, topic_id) == (1, (1,), (), ())  # the last known leader, as an unclean election
    assert p.leader_recovery_state is LeaderRecoveryState.RECOVERING


def test_a_fenced_elr_member_is_not_elected() -> None:
    harness = make()
    topic_id = last_replica_standing(harness)
    rejoin(harness, 3, clean=True)  # 3 left while the ISR was at min ISR: not eligible
    assert state(harness, topic_id) == (NO_LEADER, (), (1, 2), (1,))


def test_version_0_keeps_the_last_replica_standing_in_the_isr_and_elects_it_after_an_unclean_restart() -> None:
    harness = make(eligible_leader_replicas_version=0)
    for b in (1, 2, 3):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2, 3]], **{"min.insync.replicas": "2"})
    fence(harness, 3, 2)
    fence(harness, 3, 2, 1)
    assert state(harness, topic_id) == (NO_LEADER, (1,), (), ())
    rejoin(harness, 1, clean=False)  # whatever it lost, it is the ISR
    assert state(harness, topic_id) == (1, (1,), (), ())
    assert harness.image.feature_level(ELIGIBLE_LEADER_REPLICAS_VERSION) == 0


def test_controlled_shutdown_moves_a_member_into_the_elr_and_a_clean_return_keeps_it() -> None:
    harness = make()
    for b in (1, 2):
        harness.start_broker(b)
    topic_id = harness.create_topic("t", assignment=[[1, 2]], **{"min.insync.replicas": "2"})
    epoch = harness.epoch(2)
    harness.heartbeat(2, epoch, want_shutdown=True)
    assert state(harness, topic_id) == (1, (1,), (2,), ())
    harness.heartbeat(1, harness.epoch(1))
    assert harness.heartbeat(2, epoch, want_shutdown=True).should_shutdown
    rejoin(harness, 2, clean=True)
    assert state(harness, topic_id) == (1, (1,), (2,), ())


def test_an_unclean_restart_leaves_every_isr_and_elr() -> None:
    harness = make()
    for b in (1, 2):
        harness.start_broker(b)
    led = harness.create_topic("led", assignment=[[2, 1]], **{"min.insync.replicas": "2"})
    followed = harness.create_topic("followed", assignment=[[1, 2]])
    harness.advance(1001)
    harness.heartbeat(1, harness.epoch(1))
    rejoin(harness, 2, clean=False)  # its session ran out, but no tick fenced it before it registered again
    assert state(harness, led) == (1, (1,), (), ())  # out of the ISR and, being unclean, not into the ELR
    assert state(harness, followed) == (1, (1,), (), ())


def test_downgrading_to_version_0_clears_every_elr() -> None:
    harness = make()
    topic_id = last_replica_standing(harness)
    downgrade = ControlConfig(session_timeout_ms=1000, eligible_leader_replicas_version=0)
    records = feature_records(harness.image, downgrade)
    assert records[0] == FeatureLevel(ELIGIBLE_LEADER_REPLICAS_VERSION, 0)
    harness.commit(ControllerResult(tuple(records), None))
    assert state(harness, topic_id)[2:] == ((), ())
    assert not harness.image.elr_enabled


def test_elr_fields_and_feature_levels_survive_encoding_and_snapshots() -> None:
    topic_id = uuid.uuid4()
    change = PartitionChange(topic_id, 0, isr=(), elr=(1, 2), last_known_elr=(1,))
    assert decode_record(encode_record(change)) == change
    unchanged = PartitionChange(topic_id, 0, isr=(1,))
    assert decode_record(encode_record(unchanged)) == unchanged  # absent lists stay absent
    feature = FeatureLevel(ELIGIBLE_LEADER_REPLICAS_VERSION, 1)
    assert decode_record(encode_record(feature)) == feature
    harness = make()
    last_replica_standing(harness)
    image = harness.image
    assert MetadataImage.from_records(image.to_records(), image.offset) == image
    partition = Partition(topic_id, 0, (1, 2), (), NO_LEADER, elr=(2,), last_known_elr=(1,))
    assert decode_record(encode_record(partition)) == partition
