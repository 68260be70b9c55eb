"""What every control operation returns: records to commit, then the response to send once they are committed."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

from minikafka.kraft_controller.metadata.records import Record

R = TypeVar("R")


@dataclass(frozen=True)
class ControllerResult(Generic[R]):
    records: tuple[Record, ...]
    response: R
    # Index in `records` of the RegisterBroker record whose offset becomes the response's broker_epoch, if any.
    broker_epoch_record_index: int | None = None
    # More records, after `records`, generated a slice at a time from the same image (a change over every partition
    # of a broker): the shell takes a slice a loop turn, so no turn generates thousands of partition changes.
    later: Iterator[Sequence[Record]] | None = None

    def whole(self) -> ControllerResult[R]:
        """The result with every later slice generated, in one go."""
        if self.later is None:
            return self
        return replace(self, records=self.records + tuple(r for part in self.later for r in part), later=None)

    def response_at(self, base_offset: int) -> R:
        """The response once `records` are committed starting at `base_offset` (a broker epoch is an offset)."""
        if self.broker_epoch_record_index is None:
            return self.response
        return replace(self.response, broker_epoch=base_offset + self.broker_epoch_record_index)  # type: ignore[type-var]
