"""The world's client invariants, each shown to hold and to break on what clients report as the world's clients
report it (acknowledgements, reads, the coordinator's `offset_committed` events, SyncGroup assignments)."""

from __future__ import annotations

from minikafka.sim.client_invariants import ClientInvariants, Read

TOPIC = "sim"


def checks(high_watermark: int = 100) -> ClientInvariants:
    return ClientInvariants(lambda _partition: high_watermark)


def broken(invariants: ClientInvariants) -> list[str]:
    return [v.invariant for v in invariants.violations]


def written(invariants: ClientInvariants, acks: int, partition: int, offset: int | None, value: bytes) -> None:
    invariants.sending(value)
    invariants.acknowledged(acks, partition, offset, value)


def commit(invariants: ClientInvariants, partition: int, offset: int, at_s: float) -> None:
    event = {"event": "offset_committed", "group": "g", "topic": TOPIC, "partition": partition, "offset": offset}
    invariants.observe_event(event, TOPIC, at_s)


def test_reads_at_the_acknowledged_offsets_hold() -> None:
    invariants = checks()
    written(invariants, -1, 0, 0, b"a")
    written(invariants, 1, 0, 1, b"b")
    written(invariants, 0, 0, None, b"c")
    for offset, value in enumerate((b"a", b"b", b"c")):
        invariants.consumed(Read("consumer-0", 0, offset, value, 1.0))
    invariants.check_final(["consumer-0"], None)
    assert broken(invariants) == []


def test_a_read_of_another_value_at_an_acknowledged_offset_is_inconsistent() -> None:
    invariants = checks()
    written(invariants, -1, 0, 0, b"a")
    written(invariants, -1, 0, 1, b"b")
    invariants.consumed(Read("consumer-0", 0, 0, b"b", 1.0))
    assert broken(invariants) == ["InconsistentOffsets"]


def test_an_acks_one_write_lost_is_counted_not_a_violation() -> None:
    invariants = checks()
    written(invariants, 1, 0, 0, b"one")
    written(invariants, 1, 0, 1, b"two")
    invariants.consumed(Read("consumer-0", 0, 0, b"two", 1.0))  # the first was truncated, another took its offset
    invariants.check_final(["consumer-0"], None)
    assert broken(invariants) == []
    assert invariants.lost_acks_one() == 2


def test_a_value_never_sent_or_definitely_failed_must_not_be_read() -> None:
    invariants = checks()
    invariants.consumed(Read("consumer-0", 0, 0, b"ghost", 1.0))
    invariants.sending(b"refused")
    invariants.failed(b"refused", definite=True)
    invariants.consumed(Read("consumer-0", 0, 1, b"refused", 1.0))
    invariants.sending(b"timed-out")
    invariants.failed(b"timed-out", definite=False)  # may have been written
    invariants.consumed(Read("consumer-0", 0, 2, b"timed-out", 1.0))
    assert broken(invariants) == ["ReadNeverWritten", "AbortedRead"]


def test_a_consumer_reading_backwards_polls_nonmonotonically_but_a_member_may_reread_after_a_join() -> None:
    invariants = checks()
    for value in (b"a", b"b"):
        invariants.sending(value)
    invariants.consumed(Read("member-0.1", 0, 5, b"a", 1.0, "g", 4, 1))
    invariants.consumed(Read("member-0.1", 0, 4, b"b", 2.0, "g", 4, 2))  # joined again into the same generation
    assert broken(invariants) == []
    invariants.consumed(Read("consumer-0", 0, 5, b"a", 1.0))
    invariants.consumed(Read("consumer-0", 0, 4, b"b", 2.0))
    assert broken(invariants) == ["NonmonotonicPoll"]


def test_commits_go_forward_within_the_log_and_no_member_polls_behind_them() -> None:
    invariants = checks(high_watermark=50)
    invariants.sending(b"a")
    commit(invariants, 0, 10, 1.0)
    commit(invariants, 0, 20, 2.0)
    invariants.consumed(Read("member-1.1", 0, 20, b"a", 3.0, "g", 2))
    assert broken(invariants) == []
    commit(invariants, 0, 15, 4.0)
    commit(invariants, 0, 60, 5.0)
    invariants.consumed(Read("member-1.1", 0, 30, b"a", 6.0, "g", 3))
    assert broken(invariants) == ["CommittedOffsetsMonotonic", "CommittedOffsetWithinLog", "NoBackwardsPoll"]


def test_one_owner_per_partition_in_a_generation() -> None:
    invariants = checks()
    invariants.assigned("g", 1, "member-0.1", [0, 1])
    invariants.assigned("g", 1, "member-1.1", [2])
    invariants.assigned("g", 2, "member-1.1", [0])  # a new generation reassigns
    assert broken(invariants) == []
    invariants.assigned("g", 2, "member-2.1", [0])
    assert broken(invariants) == ["NoDoubleOwnership"]


def test_the_group_must_consume_every_acks_all_record_at_least_once() -> None:
    invariants = checks()
    written(invariants, -1, 0, 0, b"a")
    written(invariants, -1, 1, 0, b"b")
    invariants.consumed(Read("member-0.1", 0, 0, b"a", 1.0, "g", 1))
    invariants.consumed(Read("member-1.1", 0, 0, b"a", 2.0, "g", 2))  # twice is allowed
    assert invariants.unread(None) == [(1, 0)]
    invariants.check_final([], "g")
    assert broken(invariants) == ["GroupConsumedEveryRecord"]


def test_an_idempotent_producers_value_must_not_be_read_at_two_offsets() -> None:
    invariants = checks()
    invariants.sending(b"plain")
    invariants.sending(b"idempotent", idempotent=True)
    for offset, value in ((0, b"plain"), (1, b"plain"), (2, b"idempotent")):
        invariants.consumed(Read("consumer-0", 0, offset, value, 1.0))
        invariants.consumed(Read("consumer-1", 0, offset, value, 1.0))
    assert broken(invariants) == []  # a plain producer's retry may be appended twice; two readers may read one
    invariants.consumed(Read("consumer-0", 0, 3, b"idempotent", 2.0))
    assert broken(invariants) == ["Duplicates"]


def test_a_read_shows_the_high_watermark_a_leader_reached_between_the_worlds_looks() -> None:
    """The leader that served offsets up to 995 crashed before the world's next step, and the new leader's high
    watermark is still behind: a commit of 996 is within what a leader had reached (seed 930045's false alarm)."""
    invariants = checks(high_watermark=993)
    invariants.sending(b"a")
    invariants.consumed(Read("member-2.1", 1, 995, b"a", 20.9, "g", 1))
    commit(invariants, 1, 996, 21.5)
    assert broken(invariants) == []
    commit(invariants, 1, 997, 22.0)
    assert broken(invariants) == ["CommittedOffsetWithinLog"]
