"""The controller quorum's elections and leaderless time, counted from Raft events (deploy/scenario/kraft.py), and
the Raft events quoted in words."""

from __future__ import annotations

from minikafka.deploy.scenario.events import sentence
from minikafka.deploy.scenario.kraft import QuorumElections, quorum_elections


def event(name: str, second: float, epoch: int) -> dict[str, object]:
    whole, fraction = divmod(second, 1)
    return {"event": name, "ts": f"2026-11-28T07:30:{int(whole):02d}.{round(fraction * 1e6):06d}Z", "epoch": epoch}


def test_leaderless_time_runs_from_the_displaced_leaders_resignation_to_the_next_election() -> None:
    elected = [event("raft_leader_elected", 12.5, 5), event("raft_leader_elected", 3.0, 2)]
    resigned = [event("raft_resigned", 10.0, 2), event("raft_resigned", 11.0, 3)]  # 11.0: a second one, later
    assert quorum_elections(elected, resigned) == QuorumElections(2, 2500, (2, 5))


def test_an_election_after_a_leader_that_never_resigned_adds_no_leaderless_time() -> None:
    assert quorum_elections([event("raft_leader_elected", 5.0, 4)], []) == QuorumElections(1, 0, (4,))
    assert quorum_elections([], []).text() == "0 KRaft elections, leaderless 0 ms"


def test_a_resignation_before_the_previous_election_is_not_counted_again() -> None:
    elected = [event("raft_leader_elected", 2.0, 2), event("raft_leader_elected", 9.0, 3)]
    resigned = [event("raft_resigned", 1.0, 1)]
    assert quorum_elections(elected, resigned).leaderless_ms == 1000


def test_raft_events_are_quoted_in_words() -> None:
    refused = {
        "event": "raft_prevote_rejected", "ts": "t", "epoch": 1, "prospective": 101,
        "reason": "fetched from leader 103 in epoch 1",
    }  # fmt: skip
    assert sentence("controller-102", refused) == (
        "controller-102 at t: refuses controller 101's pre-vote at epoch 1: fetched from leader 103 in epoch 1"
    )
    displaced = {"event": "raft_resigned", "ts": "t", "epoch": 1, "reason": "higher epoch 3"}
    assert sentence("controller-103", displaced) == "controller-103 at t: stops leading epoch 1: higher epoch 3"
