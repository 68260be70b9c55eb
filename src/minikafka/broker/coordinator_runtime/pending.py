"""The requests a coordinator holds until its writes are acknowledged, by request id, each with the partition it
runs on: unloading the partition answers them with the error a failure builds."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from minikafka.common.errors import ErrorCode

T = TypeVar("T")

# Builds a request's answer for an error it did not get from the core (request id, error).
Failure = Callable[[int, ErrorCode], T]


@dataclass(frozen=True)
class Held(Generic[T]):
    request_id: int
    future: asyncio.Future[T]


@dataclass(frozen=True)
class _Pending(Generic[T]):
    partition: int
    future: asyncio.Future[T]
    failure: Failure[T]


class PendingRequests(Generic[T]):
    def __init__(self) -> None:
        self._pending: dict[int, _Pending[T]] = {}
        self._ids = itertools.count(1)

    def hold(self, partition: int, failure: Failure[T]) -> Held[T]:
        request_id = next(self._ids)
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = _Pending(partition, future, failure)
        return Held(request_id, future)

    def new_id(self) -> int:
        """An id for a write no request waits on (a timer's), never one a held request has."""
        return next(self._ids)

    def answer(self, request_id: int, result: T) -> None:
        pending = self._pending.pop(request_id, None)
        if pending is not None and not pending.future.done():
            pending.future.set_result(result)

    def fail_partition(self, partition: int, error: ErrorCode) -> None:
        for request_id, pending in list(self._pending.items()):
            if pending.partition == partition:
                del self._pending[request_id]
                if not pending.future.done():
                    pending.future.set_result(pending.failure(request_id, error))
