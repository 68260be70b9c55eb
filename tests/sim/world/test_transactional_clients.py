"""The world's transactional clients (`--transactional N` with read_committed consumers): chaos's transactional
producer over the simulated network, committing, aborting and crashing at seeded points through the faults, judged
by `analyze`'s transactional invariants; each invariant both ways on reports shaped as the clients make them, and a
last stable offset that ignores open transactions caught on the cluster."""

from __future__ import annotations

import re

import pytest

from minikafka.cli import main
from minikafka.client.consumer import READ_COMMITTED
from minikafka.sim.clients import ClientMix
from minikafka.sim.transaction_invariants import LeaderLso, TransactionInvariants, TxnKey
from minikafka.sim.world import SimulationSettings, simulate_seed

BUG = "stable-offset-ignores-open-transactions"
T0 = TxnKey("t0", 0)
VALUES = {0: [b"t0-0-0-0", b"t0-0-0-1"], 1: [b"t0-0-1-0"]}
TRANSACTIONAL = ClientMix(consumers=1, transactional=2, isolation_level=READ_COMMITTED)


def written(commit: bool | None, acknowledged: bool = True) -> TransactionInvariants:
    """Transaction t0#0 with its batches at partition 0 offsets 10-11 and partition 1 offset 20; `commit`: the EndTxn
    sent (None: none yet)."""
    checks = TransactionInvariants()
    checks.begin(T0, VALUES, 1.0)
    checks.batch_acknowledged(T0, 0, 10)
    checks.batch_acknowledged(T0, 1, 20)
    if commit is not None:
        checks.ending(T0, commit)
        checks.ended(T0, commit and acknowledged)
    return checks


def names(checks: TransactionInvariants) -> list[str]:
    return [v.invariant for v in checks.violations]


def test_a_read_committed_read_of_an_open_or_aborted_transaction_is_an_aborted_read() -> None:
    for commit, state in ((None, "still open"), (False, "aborted")):
        checks = written(commit)
        checks.polled("c", [(0, 10, b"t0-0-0-0")], {0: 11}, 2.0)
        assert names(checks) == ["AbortedRead"] and state in checks.violations[0].detail
    checks = written(True)
    checks.polled("c", [(0, 10, b"t0-0-0-0"), (0, 11, b"t0-0-0-1"), (1, 20, b"t0-0-1-0")], {0: 12, 1: 21}, 2.0)
    checks.check_torn()
    checks.check_final(["c"])
    assert names(checks) == []


def test_a_new_session_fences_the_open_transaction_and_a_read_of_it_is_aborted() -> None:
    checks = written(None)
    checks.fencing("t0")
    checks.polled("c", [(1, 20, b"t0-0-1-0")], {1: 21}, 2.0)
    assert names(checks) == ["AbortedRead"] and "aborted" in checks.violations[0].detail


def test_a_commit_read_in_part_while_the_reader_went_past_the_rest_is_torn() -> None:
    checks = written(True)
    checks.polled("c", [(0, 10, b"t0-0-0-0"), (0, 11, b"t0-0-0-1")], {0: 12, 1: 20}, 2.0)
    checks.check_torn()
    assert names(checks) == []  # partition 1 not reached yet: the rest may still come
    checks.polled("c", [], {0: 12, 1: 25}, 2.5)
    checks.check_torn()
    assert names(checks) == ["TornTransaction"] and "partition 1 offset 20" in checks.violations[0].detail
    untouched = written(True, acknowledged=False)
    untouched.polled("c", [], {0: 12, 1: 21}, 2.0)  # none of an unanswered commit: allowed
    untouched.check_torn()
    assert names(untouched) == []


def test_an_acknowledged_commit_not_read_at_the_end_is_lost() -> None:
    checks = written(True)
    checks.polled("c", [(0, 10, b"t0-0-0-0"), (0, 11, b"t0-0-0-1")], {0: 12, 1: 20}, 2.0)
    assert checks.unread("c") == [(1, 20)] and checks.behind("c")
    checks.check_final(["c"])
    assert names(checks) == ["NoCommittedRecordLost"]
    unanswered = written(True, acknowledged=False)  # all or none of it: none read is allowed
    unanswered.check_final(["c"])
    assert names(unanswered) == []


def test_a_last_stable_offset_past_an_open_transaction_is_caught() -> None:
    checks = written(None)
    checks.check_stable([LeaderLso(1, 0, 10), LeaderLso(2, 1, 20)], 2.0)
    assert names(checks) == []
    checks.check_stable([LeaderLso(1, 0, 12)], 2.0)
    assert names(checks) == ["OpenTransactionHoldsLastStableOffset"]
    for decided in (written(True), written(False)):
        decided.check_stable([LeaderLso(1, 0, 12)], 2.0)
        assert names(decided) == []
    expired = written(None)  # past the transaction timeout the coordinator may abort it
    expired.check_stable([LeaderLso(1, 0, 12)], 62.0)
    assert names(expired) == []


def test_a_read_of_a_value_no_transaction_wrote_or_at_an_offset_holding_another_is_caught() -> None:
    checks = written(True)
    checks.polled("c", [(0, 30, b"nobody")], {0: 31}, 2.0)
    checks.polled("c", [(1, 20, b"other")], {1: 21}, 2.0)
    assert names(checks) == ["ReadNeverWritten", "InconsistentOffsets"]


def test_a_seed_with_transactional_producers_keeps_every_invariant() -> None:
    result = simulate_seed(SimulationSettings(1, duration_s=10.0, clients=TRANSACTIONAL))
    replay = (
        "minikafka simulate --seed 1 --duration-ms 10000 --consumers 1 --isolation-level read_committed "
        "--transactional 2"
    )
    assert result.violation is None, f"{result.violation}; replay: {replay}\n" + "\n".join(result.trace)
    txns = result.observed["transactions"]
    # not vacuous: commits and aborts through the faults, every committed record read back read_committed
    assert result.faults >= 2 and txns["committed"] > 20 and txns["aborted"] > 5, (replay, txns)
    assert txns["read_committed_records"] >= 6 * txns["committed"], txns


@pytest.mark.parametrize(
    ("bug", "invariant", "detail"),
    [
        (BUG, "AbortedRead", "still open (no EndTxn(commit) sent)"),
        ("commit-marker-to-first-partition", "TornTransaction", "of committed transaction t1#0 and went past"),
    ],
)
def test_a_broken_transaction_path_is_caught_the_same_way_twice(bug: str, invariant: str, detail: str) -> None:
    """Seed 1 holds with the same clients (above); with the bug planted it breaks, with one trace hash."""
    settings = SimulationSettings(1, duration_s=10.0, clients=TRANSACTIONAL, planted_bug=bug)
    first, again = simulate_seed(settings), simulate_seed(settings)
    assert first.violation is not None and first.violation.invariant == invariant, first.violation
    assert detail in first.violation.detail, first.violation.detail
    assert first.trace_hash == again.trace_hash


def test_without_a_reader_the_leaders_last_stable_offsets_give_the_open_transactions_away() -> None:
    unread = SimulationSettings(1, duration_s=10.0, clients=ClientMix(transactional=2), planted_bug=BUG)
    caught = simulate_seed(unread).violation
    assert caught is not None and caught.invariant == "OpenTransactionHoldsLastStableOffset", caught


def test_the_planted_bug_is_caught_from_the_command_line_with_its_replay(capsys: pytest.CaptureFixture[str]) -> None:
    options = ["--consumers", "1", "--isolation-level", "read_committed", "--transactional", "2"]
    code = main(["simulate", "--seed", "1", "--duration-ms", "10000", "--planted-bug", BUG, *options])
    out = capsys.readouterr().out
    assert code == 1 and "broke AbortedRead" in out, out
    replay = re.search(r"replay with:\n  (.*)\n", out)
    assert replay is not None and replay.group(1).endswith(f"--planted-bug {BUG} {' '.join(options)}")


def test_transactions_without_a_read_committed_consumer_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--seed", "1", "--transactional", "1", "--consumers", "1"]) == 1
    assert "--transactional needs read_committed consumers" in capsys.readouterr().err
