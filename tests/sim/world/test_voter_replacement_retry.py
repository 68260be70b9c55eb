"""The simulated operator replacing a wiped controller's voter: a change asked again after its answer was lost to a
leader change is refused (VOTER_NOT_FOUND, DUPLICATE_VOTER) once the first one committed, and counts as made when
the voter set shows it, as an operator reads it with `kafka-metadata-quorum describe`. Seed 980180 of a search found
the removal committed, answered NOT_CONTROLLER, and refused when asked again."""

from __future__ import annotations

from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2
from minikafka.sim.controller_quorum import QuorumOperator


class OperatorSeeing(QuorumOperator):
    """An operator whose quorum description names these voters (None: no controller answers)."""

    def __init__(self, voters: list[tuple[int, str]] | None) -> None:
        super().__init__(timeout_s=1.0)
        self.voters = voters

    async def describe(self) -> controller_pb2.DescribeQuorumResponse | None:
        if self.voters is None:
            return None
        return controller_pb2.DescribeQuorumResponse(
            current_voters=[{"replica_id": v, "replica_directory_id": d} for v, d in self.voters]
        )


async def refusal(text: str) -> str:
    return text


async def test_a_removal_refused_after_it_committed_counts_as_made_and_one_that_did_not_is_still_refused() -> None:
    gone = "VOTER_NOT_FOUND: no voter 102 with directory old"
    removed = OperatorSeeing([(101, "a"), (103, "c")])
    assert await removed._unless_done(refusal(gone), ErrorCode.VOTER_NOT_FOUND, 102, "old", present=False) == ""
    still_there = OperatorSeeing([(101, "a"), (102, "old"), (103, "c")])
    assert await still_there._unless_done(refusal(gone), ErrorCode.VOTER_NOT_FOUND, 102, "old", present=False) == gone
    unknown = OperatorSeeing(None)
    assert await unknown._unless_done(refusal(gone), ErrorCode.VOTER_NOT_FOUND, 102, "old", present=False) == gone


async def test_an_addition_refused_as_a_duplicate_counts_as_made_only_under_its_new_directory() -> None:
    duplicate = "DUPLICATE_VOTER: voter 102 is already in the voter set"
    added = OperatorSeeing([(101, "a"), (102, "new"), (103, "c")])
    assert await added._unless_done(refusal(duplicate), ErrorCode.DUPLICATE_VOTER, 102, "new", present=True) == ""
    other = OperatorSeeing([(101, "a"), (102, "old"), (103, "c")])
    refused = await other._unless_done(refusal(duplicate), ErrorCode.DUPLICATE_VOTER, 102, "new", present=True)
    assert refused == duplicate
    assert await added._unless_done(refusal("NOT_CONTROLLER: x"), ErrorCode.DUPLICATE_VOTER, 102, "new", True) != ""
