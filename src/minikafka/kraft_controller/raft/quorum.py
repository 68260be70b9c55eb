"""Majority math for the controller quorum."""

from __future__ import annotations

from collections.abc import Iterable


def majority(voter_count: int) -> int:
    return voter_count // 2 + 1


def majority_offset(offsets: Iterable[int], voter_count: int) -> int:
    """The largest offset that a majority of the voters have reached (missing voters count as 0)."""
    ordered = sorted(offsets, reverse=True)
    ordered += [0] * (voter_count - len(ordered))
    return ordered[majority(voter_count) - 1]


def has_majority(members: Iterable[int], voters: frozenset[int]) -> bool:
    return len(set(members) & voters) >= majority(len(voters))
