"""`simulate --compacted-keys N`: the world's topic compacted as chaos's is, the producers overwriting N keys (every
tenth write a tombstone); every broker's cleaner works during the run, and the acknowledged records are judged as
`analyze` judges a compacted topic: a record the leader holds a later one of its key for may go
(CompactedLatestValueKept for one that is not replaced), a tombstone may go once `delete.retention.ms` has passed
but its key's older value must not come back, and an offset never holds another value (NoCommittedRecordLost)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from minikafka.cli import main
from minikafka.common.record_batch import Record, build_batch
from minikafka.sim.client_invariants import ClientInvariants, Read
from minikafka.sim.clients import ClientMix, ProducerSpec
from minikafka.sim.invariants import (
    Acknowledged,
    Comeback,
    Invariants,
    PartitionReplica,
    compacted_log_matching,
    records_between,
    tombstone_of,
)
from minikafka.sim.tombstone_reads import TombstoneReads
from minikafka.sim.tombstone_retention import LogEnds, explain_comeback
from minikafka.sim.world import SimulationSettings, simulate_seed


def leader_holding(values: dict[int, bytes], high_watermark: int, broker: int = 1) -> PartitionReplica:
    def read(low: int, high: int) -> dict[int, bytes]:
        return {offset: value for offset, value in values.items() if low <= offset < high}

    return PartitionReplica(
        broker, 0, broker == 1, 0, high_watermark, high_watermark, read, replica_high_watermark=high_watermark
    )


def checked(values: dict[int, bytes], acknowledged: list[Acknowledged], compacted: bool = True) -> list[str]:
    invariants = Invariants(compacted=compacted)
    for record in acknowledged:
        invariants.acknowledge(record)
    found = invariants.check_all_acknowledged([leader_holding(values, 10)])
    return [] if found is None else [found.invariant]


def test_a_record_whose_key_the_leader_holds_again_later_may_be_gone() -> None:
    acked = [Acknowledged(0, 1, b"k1=r1"), Acknowledged(0, 5, b"k1=r5")]
    assert checked({5: b"k1=r5"}, acked) == []
    # A later write of the key that was never acknowledged replaces it as well.
    assert checked({7: b"k1=r7"}, acked[:1]) == []


def test_the_latest_value_of_a_key_gone_breaks_compacted_latest_value_kept() -> None:
    acked = [Acknowledged(0, 1, b"k1=r1"), Acknowledged(0, 5, b"k1=r5")]
    assert checked({1: b"k1=r1", 6: b"k2=r6"}, acked) == ["CompactedLatestValueKept"]
    assert checked({}, acked, compacted=False) == ["NoCommittedRecordLost"]


def test_another_value_at_an_acknowledged_offset_breaks_no_committed_record_lost() -> None:
    assert checked({1: b"k1=other", 5: b"k1=r5"}, [Acknowledged(0, 1, b"k1=r1")]) == ["NoCommittedRecordLost"]


def test_replicas_that_cleaned_apart_match_where_both_still_hold_a_record() -> None:
    leader = leader_holding({1: b"k1=r1", 5: b"k1=r5", 6: b"k2=r6"}, 10)
    cleaned = leader_holding({5: b"k1=r5", 6: b"k2=r6"}, 10, broker=2)
    matched: dict[tuple[int, int, int], int] = {}
    assert compacted_log_matching([leader, cleaned], matched) is None and matched == {(0, 1, 2): 10}
    diverged = leader_holding({5: b"k1=r5", 6: b"k2=other"}, 10, broker=2)
    found = compacted_log_matching([leader, diverged], {})
    assert found is not None and found.invariant == "LogMatching" and "values at offset 6" in found.detail


def test_every_cleaner_compacts_the_topic_under_faults_and_the_run_holds() -> None:
    settings = SimulationSettings(
        1, duration_s=20.0, clients=ClientMix((ProducerSpec(-1), ProducerSpec(1)), compacted_keys=20)
    )
    result = simulate_seed(settings)
    assert result.violation is None, result.trace
    assert result.observed["compaction"]["cleanings"] > 0
    assert result.observed["compaction"]["records_removed"] > 0
    assert result.faults >= 2


def test_compacted_keys_take_producers_plain_consumers_and_a_group_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--seed", "1", "--compacted-keys", "5", "--transactional", "1"]) == 1
    assert "--compacted-keys takes producers, plain consumers and a group only" in capsys.readouterr().err


def test_a_group_consumes_each_keys_latest_record_of_a_compacted_topic_and_the_run_holds() -> None:
    """Its members, killed and restarted under the faults, go on from the committed offsets past records a cleaner
    removed meanwhile; the group must still have read each key's latest record (GroupConsumedEveryRecord)."""
    mix = ClientMix((ProducerSpec(-1),), group_members=2, compacted_keys=20)
    result = simulate_seed(SimulationSettings(1, duration_s=20.0, clients=mix))
    assert result.violation is None, result.trace
    assert result.observed["compaction"]["skipped_by_group"] > 0 and result.observed["commits"] > 0


def test_a_late_consumer_reads_each_keys_latest_record_of_a_cleaned_log_and_the_run_holds() -> None:
    settings = SimulationSettings(
        1, duration_s=20.0, clients=ClientMix((ProducerSpec(-1),), consumers=1, compacted_keys=20)
    )
    result = simulate_seed(settings)
    assert result.violation is None, result.trace
    # The consumer started halfway through, after cleanings had removed records it then never read.
    assert result.observed["compaction"]["skipped_by_consumers"] > 0
    assert result.observed["consumed"] > 0


def late_reader(held: set[tuple[int, int]] | None = None) -> ClientInvariants:
    invariants = ClientInvariants(lambda _partition: 100, lambda p, o: held is None or (p, o) in held)
    for offset, value in enumerate((b"k1=a", b"k2=b", b"k1=c", b"k2=")):
        invariants.sending(value, idempotent=True)
        invariants.acknowledged(-1, 0, offset, value)
    return invariants


def test_a_consumer_may_skip_a_replaced_record_but_must_read_each_keys_latest() -> None:
    invariants = late_reader()
    for offset, value in ((1, b"k2=b"), (2, b"k1=c"), (3, b"k2=")):
        invariants.consumed(Read("consumer-0", 0, offset, value, 1.0))
    invariants.check_final(["consumer-0"], None)
    assert invariants.violations == [] and invariants.skipped_as_cleaned("consumer-0") == 1
    missed_latest = late_reader()
    missed_latest.consumed(Read("consumer-0", 0, 0, b"k1=a", 1.0))
    missed_latest.consumed(Read("consumer-0", 0, 3, b"k2=", 1.0))
    missed_latest.check_final(["consumer-0"], None)
    assert [v.invariant for v in missed_latest.violations] == ["NoCommittedRecordLost"]
    assert "partition 0 offset 2" in missed_latest.violations[0].detail


def test_a_consumer_may_miss_a_tombstone_only_once_the_leader_no_longer_holds_it() -> None:
    for held, broken in (({(0, 3)}, ["NoCommittedRecordLost"]), (set(), [])):
        invariants = late_reader(held)
        invariants.consumed(Read("consumer-0", 0, 1, b"k2=b", 1.0))
        invariants.consumed(Read("consumer-0", 0, 2, b"k1=c", 1.0))
        invariants.check_final(["consumer-0"], None)
        assert [v.invariant for v in invariants.violations] == broken


def timed_reader(retention_s: float, later_send_of_k2: bool = False) -> ClientInvariants:
    """k2's tombstone (offset 3) sent at 10 s; the reader reads offsets 1 and 2, then 4 at 25 s."""
    invariants = ClientInvariants(lambda _partition: 100, lambda _p, _o: False, TombstoneReads(retention_s))
    for offset, value in enumerate((b"k1=a", b"k2=b", b"k1=c", b"k2=", b"k3=d")):
        invariants.sending(value, idempotent=True, at_s=float(offset * 10 // 3))
        invariants.acknowledged(-1, 0, offset, value, sent_at=float(offset * 10 // 3))
    if later_send_of_k2:
        invariants.sending(b"k2=e", idempotent=False, at_s=12.0)  # acks=0: where it landed is unknown
    for offset, value, at_s in ((1, b"k2=b", 20.0), (2, b"k1=c", 20.0), (4, b"k3=d", 25.0)):
        invariants.consumed(Read("consumer-0", 0, offset, value, at_s))
    invariants.check_final(["consumer-0"], None)
    return invariants


def test_a_tombstone_a_reader_went_past_within_delete_retention_must_have_been_read() -> None:
    missed = timed_reader(retention_s=30.0)
    assert [v.invariant for v in missed.violations] == ["NoCommittedRecordLost"]
    assert "a tombstone sent at 10.000s that it went past at 25.000s" in missed.violations[0].detail
    # Went past it 15 s after it was sent: a cleaner may have removed it with a 10 s retention.
    assert timed_reader(retention_s=10.0).violations == []
    # A later record of its key may have replaced it, and been removed in its turn.
    assert timed_reader(retention_s=30.0, later_send_of_k2=True).violations == []


def test_a_cleaner_planted_to_ignore_delete_retention_is_caught_by_a_late_consumer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Seed 1 with controller faults only: no replica falls behind to bring a key back, but consumer-0, starting at
    a third of the run, goes past tombstones the planted cleaner removed within delete.retention.ms (the shipped
    one keeps them all, and the seed holds: the keys are not written twice)."""
    command = [
        "simulate", "--seed", "1", "--compacted-keys", "1503", "--consumers", "2", "--acks", "all",
        "--faults", "controller-kill", "--duration-ms", "30000", "--set", "log.cleaner.delete.retention.ms=30000",
    ]  # fmt: skip
    assert main([*command, "--planted-bug", "cleaner-ignores-delete-retention"]) == 1
    out = capsys.readouterr().out
    assert "consumer-0 never read 23 acks=all acknowledged record(s)" in out
    assert "within delete.retention.ms (30 s): no cleaner may have removed it" in out


def test_an_acks_1_record_a_later_one_of_its_key_replaced_is_not_counted_lost_when_unread() -> None:
    invariants = late_reader()
    invariants.acknowledged(1, 0, 4, b"k3=x")  # replaced by offset 5: a cleaner may have removed it
    invariants.acknowledged(-1, 0, 5, b"k3=y")
    invariants.acknowledged(1, 0, 6, b"k4=z")  # its key's latest: unread, it was lost
    assert invariants.lost_acks_one() == 1


def test_tombstones_of_one_key_read_alike_at_two_offsets_are_no_duplicates() -> None:
    invariants = late_reader()
    invariants.acknowledged(-1, 0, 4, b"k2=")
    invariants.consumed(Read("consumer-0", 0, 3, b"k2=", 1.0))
    invariants.consumed(Read("consumer-0", 0, 4, b"k2=", 1.0))
    assert invariants.violations == []


# Seed 2 of this command: broker 1, leading sim-0 while its followers fall behind, cleans past its high watermark;
# the followers elect broker 2, broker 1 truncates the uncommitted tail that replaced key-539's acknowledged record,
# and the preferred election makes it leader again without that record.
PLANTED = [
    "simulate", "--seed", "2", "--compacted-keys", "700", "--acks", "all,1",
    "--faults", "isolate-leader,partition,kill,pause", "--set", "leader.imbalance.check.interval.seconds=5",
]  # fmt: skip


def test_a_cleaner_planted_to_clean_past_the_high_watermark_is_caught_and_replays(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, replay = caught_and_replayed(capsys, [*PLANTED, "--planted-bug", "cleaner-ignores-high-watermark"])
    assert replay.endswith("--planted-bug cleaner-ignores-high-watermark --acks all,1 --compacted-keys 700")
    assert main(PLANTED) == 0  # the shipped cleaner stops at the high watermark


def caught_and_replayed(capsys: pytest.CaptureFixture[str], command: list[str]) -> tuple[str, str]:
    """The output of `command`, which breaks CompactedLatestValueKept, and its replay command, which gives the same
    trace hash again."""
    assert main(command) == 1
    out = capsys.readouterr().out
    assert "broke CompactedLatestValueKept" in out
    trace_hash = out.split("trace hash ")[1].split(";")[0]
    replay = out.split("replay with:\n  ")[1].splitlines()[0]
    assert main(replay.split()[1:]) == 1
    assert f"trace hash {trace_hash}" in capsys.readouterr().out
    return out, replay


def test_a_tombstone_reads_as_its_key_and_replaces_the_keys_earlier_records() -> None:
    tombstone = build_batch([Record(None, b"k1")], base_offset=5)
    assert records_between(tombstone, 0, 10).values == {5: tombstone_of(b"k1")}
    acked = [Acknowledged(0, 1, b"k1=r1"), Acknowledged(0, 5, tombstone_of(b"k1"))]
    assert checked({5: tombstone_of(b"k1")}, acked) == []
    assert checked({1: b"k1=r1"}, acked) == ["CompactedLatestValueKept"]


def test_a_tombstone_may_go_but_the_keys_older_value_must_not_come_back() -> None:
    acked = [Acknowledged(0, 1, b"k1=r1"), Acknowledged(0, 5, tombstone_of(b"k1"))]
    assert checked({6: b"k2=r6"}, acked) == []  # past delete.retention.ms: nothing of the key is left
    assert checked({3: tombstone_of(b"k1")}, acked) == []  # an older tombstone still deletes it
    invariants = Invariants(compacted=True)
    for record in acked:
        invariants.acknowledge(record)
    found = invariants.check_all_acknowledged([leader_holding({1: b"k1=r1", 6: b"k2=r6"}, 10)])
    assert found is not None and found.invariant == "CompactedLatestValueKept"
    assert "came back with the older value b'k1=r1' at offset 1" in found.detail


def test_a_new_leader_that_missed_a_removed_tombstone_is_caught_when_it_takes_its_epoch() -> None:
    """Broker 2 held k1=r1 but was away while broker 1 took the tombstone and cleaned it away: when broker 2 leads,
    the deleted key is back, long before the final read."""
    invariants = Invariants(compacted=True)
    for record in (Acknowledged(0, 1, b"k1=r1"), Acknowledged(0, 5, tombstone_of(b"k1"))):
        invariants.acknowledge(record)
    assert invariants.check([leader_holding({1: b"k1=r1", 5: tombstone_of(b"k1")}, 6)], []) is None
    assert invariants.check([leader_holding({6: b"k2=r6"}, 7)], []) is None  # the tombstone cleaned away
    missed = leader_holding({1: b"k1=r1", 6: b"k2=r6"}, 7, broker=2)
    found = invariants.check([replace(missed, leads=True, leader_epoch=1)], [])
    assert found is not None and found.invariant == "CompactedLatestValueKept" and "came back" in found.detail


def test_tombstones_removed_within_a_run_hold_as_analyze_judges_them(capsys: pytest.CaptureFixture[str]) -> None:
    """Every key written about once (3,000 keys) leaves each tombstone the latest record of its key for the whole
    run, and a one-second delete.retention.ms lets the cleaners remove them."""
    command = ["simulate", "--seed", "1", "--compacted-keys", "3000", "--acks", "all", "--duration-ms", "20000"]
    assert main([*command, "--set", "log.cleaner.delete.retention.ms=1000"]) == 0
    removed = capsys.readouterr().out.split(" tombstones)")[0].rsplit("(", 1)[1]
    assert int(removed) > 0


# Seed 4 of this command: broker 1, paused for 30 s, keeps key-126's value while its leader takes the key's tombstone;
# a cleaner that ignores delete.retention.ms removes the tombstone before broker 1 is back, and when broker 1 leads
# again the deleted key is back. 1,503 keys: a multiple of the 3 partitions (a key stays on its partition), not of
# the 10 writes between tombstones (the one producer's tombstones fall on other keys each pass).
def resurrection(seed: int, acks: str) -> list[str]:
    return [
        "simulate", "--seed", str(seed), "--compacted-keys", "1503", "--acks", acks, "--faults", "pause",
        "--max-down-s", "30", "--set", "leader.imbalance.check.interval.seconds=5",
        "--set", "log.cleaner.delete.retention.ms=120000",
    ]  # fmt: skip


RESURRECTION = resurrection(4, "all")


def test_a_cleaner_planted_to_ignore_delete_retention_brings_a_deleted_key_back_and_is_caught(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out, _replay = caught_and_replayed(capsys, [*RESURRECTION, "--planted-bug", "cleaner-ignores-delete-retention"])
    assert "its key came back with the older value b'key-126=r126' at offset 42" in out
    assert main(RESURRECTION) == 0  # the shipped cleaner keeps the tombstone for delete.retention.ms
    # With a retention shorter than broker 1 was behind, the shipped cleaner brings the key back as Kafka allows.
    capsys.readouterr()
    assert main([*RESURRECTION[:-1], "log.cleaner.delete.retention.ms=1000"]) == 0
    assert (
        "explained loss (CompactedLatestValueKept): broker 1's log of partition 0 passed offset 543 only at 52.2s, "
        "8.8 s after the tombstone there was committed: longer than delete.retention.ms (1000 ms)"
    ) in capsys.readouterr().out


def test_a_value_deleted_by_a_committed_write_of_any_producer_may_be_gone_with_its_removed_tombstone() -> None:
    """Seed 980141 of the tombstone search: an acks=0 producer's tombstone deleted key-1020's acks=all value, and
    was itself removed past delete.retention.ms. A tombstone the world saw committed stands for the key; one it
    never saw below a high watermark (the planted cleaner's case) does not."""
    for committed in (True, False):
        invariants = Invariants(compacted=True)
        invariants.acknowledge(Acknowledged(0, 1, b"k1=r1"))
        held = {1: b"k1=r1", 3: tombstone_of(b"k1")}
        assert invariants.check([leader_holding(held, 4 if committed else 2)], []) is None
        found = invariants.check_all_acknowledged([leader_holding({6: b"k2=r6"}, 10)])
        assert (found is None) == committed


def test_a_committed_tombstone_of_any_producer_keeps_its_key_deleted_on_every_later_leader() -> None:
    """A tombstone no acks=all producer wrote counts once the world saw it committed (below a leader's high
    watermark): a later leader whose log ends the key on an older value breaks CompactedLatestValueKept. One never
    committed does not count."""
    for committed in (True, False):
        invariants = Invariants(compacted=True)
        held = {1: b"k1=r1", 3: tombstone_of(b"k1")}
        assert invariants.check([leader_holding(held, 4 if committed else 2)], []) is None
        missed = replace(leader_holding({1: b"k1=r1", 6: b"k2=r6"}, 10, broker=2), leads=True, leader_epoch=1)
        found = invariants.check([missed], [])
        assert (found is not None and "its key came back with an older value" in found.detail) == committed


def test_the_planted_cleaner_is_caught_on_the_tombstones_of_acks_1_writes(capsys: pytest.CaptureFixture[str]) -> None:
    # Seed 7, acks=1 only: broker 2, paused, kept key-26=r26; its leader's planted cleaner removed the key's
    # tombstone at once, and broker 2, leading sim-2 in epoch 1, has the key back. The shipped cleaner holds.
    assert main([*resurrection(7, "1"), "--planted-bug", "cleaner-ignores-delete-retention"]) == 1
    out = capsys.readouterr().out
    assert "holds b'key-26=r26' at offset 8, where its key's tombstone at offset 509 was committed" in out


def test_a_comeback_is_explained_only_when_the_leader_was_behind_the_tombstone_longer_than_the_retention() -> None:
    log_ends = LogEnds()
    for at, end in ((1.0, 4), (2.0, 8), (3.0, 2), (9.0, 9)):  # past offset 5, truncated below it, past it again
        log_ends.note(at, [leader_holding({}, end)])
    assert log_ends.last_passed(1, 0, 5) == 9.0 and log_ends.last_passed(1, 0, 9) is None
    comeback = Comeback(1, 0, 5, committed_at=2.5)
    assert explain_comeback(log_ends, comeback, 6000, 0.25) is not None  # 6.5 s behind
    assert explain_comeback(log_ends, comeback, 7000, 0.25) is None
    assert explain_comeback(log_ends, replace(comeback, committed_at=None), 1000, 0.25) is None
