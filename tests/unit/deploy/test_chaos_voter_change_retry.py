"""chaos's controller-wipe replaces the wiped voter as an operator does: a RemoveRaftVoter or AddRaftVoter asked
again after its answer was lost to a leader change is refused (VOTER_NOT_FOUND, DUPLICATE_VOTER) once the first one
committed, and counts as made when the voter set shows it; refused otherwise, it ends the run."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.deploy.chaos import _changed
from minikafka.deploy.local_cluster import ClusterError


def answered(code: ErrorCode | None) -> Callable[[], None]:
    """A voter change call that fails with `code` (None: it succeeds)."""

    def call() -> None:
        if code is not None:
            raise KafkaError(code, "as the controller answered")

    return call


def test_a_change_refused_because_its_lost_answer_committed_it_counts_as_made() -> None:
    assert _changed(answered(ErrorCode.VOTER_NOT_FOUND), ErrorCode.VOTER_NOT_FOUND, lambda: True) is True
    assert _changed(answered(ErrorCode.DUPLICATE_VOTER), ErrorCode.DUPLICATE_VOTER, lambda: True) is True
    assert _changed(answered(None), ErrorCode.VOTER_NOT_FOUND, lambda: False) is True


def test_a_change_the_voter_set_does_not_show_is_refused_and_no_leader_asks_again() -> None:
    with pytest.raises(ClusterError, match="voter change refused: VOTER_NOT_FOUND"):
        _changed(answered(ErrorCode.VOTER_NOT_FOUND), ErrorCode.VOTER_NOT_FOUND, lambda: False)
    with pytest.raises(ClusterError, match="DUPLICATE_VOTER"):
        _changed(answered(ErrorCode.DUPLICATE_VOTER), ErrorCode.VOTER_NOT_FOUND, lambda: True)
    assert _changed(answered(ErrorCode.NOT_CONTROLLER), ErrorCode.VOTER_NOT_FOUND, lambda: True) is None
