"""Bugs planted in the shipped shells for one simulated run, to show the simulation finds what it should: each
wraps one shell method for the run's duration and puts it back after. Never used outside `simulate`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from minikafka.broker.replica_manager import ReplicaManager
from minikafka.kraft_controller.raft.driver import RaftDriver


def _leader_acks_before_replication() -> tuple[Any, str, Callable[..., Any]]:
    """The broker answers acks=all as soon as its own log has the batch (as acks=1): a leader cut off from its
    followers, or one that crashes before they fetch, loses acknowledged writes."""
    original = ReplicaManager.produce

    def produce(self: ReplicaManager, tp: Any, records: bytes, acks: int, *args: Any, **kwargs: Any) -> Any:
        return original(self, tp, records, 1 if acks == -1 else acks, *args, **kwargs)

    return ReplicaManager, "produce", produce


def _raft_counts_unflushed() -> tuple[Any, str, Callable[..., Any]]:
    """The Raft leader's fetch handling no longer waits for its own appends to be fsynced (the durability gate):
    its unflushed entries count toward the high watermark, and a power loss can take a committed entry away."""
    original = RaftDriver._flush_in_background

    def flush_in_background(self: RaftDriver) -> None:
        original(self)
        self._durable.set()

    return RaftDriver, "_flush_in_background", flush_in_background


PLANTED_BUGS: dict[str, Callable[[], tuple[Any, str, Callable[..., Any]]]] = {
    "leader-acks-before-replication": _leader_acks_before_replication,
    "raft-counts-unflushed": _raft_counts_unflushed,
}


@contextlib.contextmanager
def planted(name: str | None) -> Iterator[None]:
    if name is None:
        yield
        return
    if name not in PLANTED_BUGS:
        raise ValueError(f"unknown planted bug '{name}'; known: {', '.join(PLANTED_BUGS)}")
    owner, attribute, replacement = PLANTED_BUGS[name]()
    original = owner.__dict__[attribute]
    setattr(owner, attribute, replacement)
    try:
        yield
    finally:
        setattr(owner, attribute, original)
