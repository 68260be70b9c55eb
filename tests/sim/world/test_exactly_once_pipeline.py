"""The world's exactly-once pipeline (`--exactly-once N`): workers of the group sim-eos consume the producers' topic
and write each record to sim-eos in transactions that commit the consumed offsets (TxnOffsetCommit), through
crashes, stalls, aborts and the faults; ExactlyOnceOutput both ways on reads shaped as the reader makes them, and a
group coordinator that applies transactional offsets on arrival caught on the cluster."""

from __future__ import annotations

from minikafka.sim.clients import ClientMix
from minikafka.sim.exactly_once_invariants import ExactlyOnceInvariants, input_of, output_value
from minikafka.sim.world import SimulationSettings, simulate_seed

BUG = "txn-offsets-applied-on-arrival"
PIPELINE = ClientMix(exactly_once=2)


def outputs(*inputs: tuple[int, int]) -> list[tuple[int, int, bytes]]:
    """Output records at offsets 0, 1, ... of each input's partition, for input records (partition, offset)."""
    next_offset: dict[int, int] = {}
    found = []
    for partition, offset in inputs:
        at = next_offset.get(partition, 0)
        next_offset[partition] = at + 1
        found.append((partition, at, output_value(partition, offset, b"r%d" % offset)))
    return found


def names(checks: ExactlyOnceInvariants) -> list[str]:
    return [v.invariant for v in checks.violations]


def no_input(_partition: int, _offset: int) -> bytes | None:
    return None


def test_the_transform_names_its_input() -> None:
    assert input_of(output_value(2, 17, b"r 5")) == (2, 17, b"r 5")
    assert input_of(b"r17") is None


def test_every_committed_input_once_holds() -> None:
    checks = ExactlyOnceInvariants()
    checks.output_polled(outputs((0, 0), (0, 1), (1, 0)), {0: 2, 1: 1})
    checks.check_final({0: 2, 1: 1}, lambda p, o: b"r%d" % o)
    assert names(checks) == []


def test_an_input_processed_twice_is_caught_as_read() -> None:
    checks = ExactlyOnceInvariants()
    checks.output_polled(outputs((0, 0), (0, 1)), {0: 2})
    checks.output_polled([(0, 2, output_value(0, 1, b"r1"))], {0: 3})
    assert names(checks) == ["ExactlyOnceOutput"] and "two committed outputs" in checks.violations[0].detail


def test_a_committed_offset_past_a_missing_output_is_a_gap() -> None:
    checks = ExactlyOnceInvariants()
    checks.output_polled(outputs((0, 0), (0, 3)), {0: 2})
    checks.check_final({0: 4}, no_input)
    assert names(checks) == ["ExactlyOnceOutput"]
    assert "2 record(s) below the group's committed offset 4 have no committed output, the first offset 1" in (
        checks.violations[0].detail
    )


def test_an_output_past_the_committed_offset_was_committed_without_its_offsets() -> None:
    checks = ExactlyOnceInvariants()
    checks.output_polled(outputs((1, 0), (1, 1)), {1: 2})
    checks.check_final({1: 1}, no_input)
    assert names(checks) == ["ExactlyOnceOutput"] and "at or past the group's committed offset 1" in (
        checks.violations[0].detail
    )


def test_an_output_carrying_another_value_than_the_input_holds_is_caught() -> None:
    checks = ExactlyOnceInvariants()
    checks.output_polled(outputs((0, 0)), {0: 1})
    checks.check_final({0: 1}, lambda p, o: b"other")
    assert names(checks) == ["ExactlyOnceOutput"] and "the input holds b'other'" in checks.violations[0].detail


def test_a_seed_with_the_pipeline_keeps_every_invariant() -> None:
    result = simulate_seed(SimulationSettings(1, duration_s=10.0, clients=PIPELINE))
    replay = "minikafka simulate --seed 1 --duration-ms 10000 --exactly-once 2"
    assert result.violation is None, f"{result.violation}; replay: {replay}\n" + "\n".join(result.trace)
    eos = result.observed["exactly_once"]
    # not vacuous: commits, aborts, crashes and a fenced zombie through the faults; every input through once
    assert result.faults >= 2 and eos["committed"] > 20 and eos["aborted"] > 3 and eos["crashes"] > 0, (replay, eos)
    assert eos["fenced"] > 0, (replay, eos)
    assert eos["outputs_read"] == result.acknowledged == sum(eos["committed_offsets"].values()), eos


def test_offsets_applied_before_the_commit_marker_are_caught_the_same_way_twice() -> None:
    """Seed 1 holds with the same clients (above); with the bug planted an aborted transaction's offsets are kept and
    its input is never processed again (at the final read), with one trace hash."""
    settings = SimulationSettings(1, duration_s=10.0, clients=PIPELINE, planted_bug=BUG)
    first, again = simulate_seed(settings), simulate_seed(settings)
    assert first.violation is not None and first.violation.invariant == "ExactlyOnceOutput", first.violation
    assert "have no committed output" in first.violation.detail, first.violation.detail
    assert first.trace_hash == again.trace_hash


def test_a_zombies_accepted_offset_commit_is_caught() -> None:
    """The stalled worker's TxnOffsetCommit accepted after the new owner processed the same records (at a step)."""
    settings = SimulationSettings(
        1, duration_s=10.0, clients=PIPELINE, planted_bug="txn-offset-commit-ignores-generation"
    )
    caught = simulate_seed(settings).violation
    assert caught is not None and caught.invariant == "ExactlyOnceOutput", caught
    assert "has two committed outputs" in caught.detail, caught.detail


def test_a_pipeline_that_never_caught_up_is_caught() -> None:
    checks = ExactlyOnceInvariants()
    checks.output_polled(outputs((0, 0)), {0: 1})
    checks.check_final({0: 1}, no_input, {0: 1, 1: 5})
    assert names(checks) == ["ExactlyOnceOutput"] and "input partition 1 committed to 0 of 5" in (
        checks.violations[0].detail
    )
