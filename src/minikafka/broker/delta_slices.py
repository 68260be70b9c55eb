"""The metadata deltas a broker still has to apply to its replicas, taken in bounded slices.

A delta that creates thousands of partitions would otherwise be applied in one loop turn (a log opened, a
become-leader or become-follower each), and the broker's heartbeat to the controller would wait behind it until its
session expired. The replica manager instead takes at most a slice's worth of steps per loop turn. Deltas are
applied whole and in log order: a delta starts only once every step of the one before it is done, so each
partition still sees its changes in order and each against its own delta's image.
"""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from minikafka.kraft_controller.metadata.image import MetadataImage

# Steps (a delta's start or end, or one partition) applied per loop turn: small enough that a turn stays well
# under a heartbeat interval even when each partition opens its log files on a loaded machine.
DEFAULT_STEPS_PER_SLICE = 25


@dataclass(frozen=True)
class StartDelta:
    """Before a delta's partitions: stop the replicas its image no longer assigns here."""

    image: MetadataImage


@dataclass(frozen=True)
class ApplyPartition:
    """Apply the delta's image to one partition (become leader or follower, or nothing new)."""

    image: MetadataImage
    topic_id: uuid.UUID
    partition: int


@dataclass(frozen=True)
class FinishDelta:
    """Every partition of the delta applied: the broker has now applied the metadata up to `offset`."""

    image: MetadataImage
    offset: int


DeltaStep = StartDelta | ApplyPartition | FinishDelta


@dataclass
class _Pending:
    image: MetadataImage
    offset: int
    partitions: deque[tuple[uuid.UUID, int]]
    started: bool = False


class PendingDeltas:
    """A FIFO of deltas not yet applied, handed out as steps, at most `limit` per `next_slice`."""

    def __init__(self) -> None:
        self._deltas: deque[_Pending] = deque()

    def __bool__(self) -> bool:
        return bool(self._deltas)

    @property
    def partitions_pending(self) -> int:
        return sum(len(delta.partitions) for delta in self._deltas)

    def add(self, image: MetadataImage, offset: int, partitions: Iterable[tuple[uuid.UUID, int]]) -> None:
        """Queue a delta: its partitions (each once, in the order given) are applied after every earlier delta."""
        self._deltas.append(_Pending(image, offset, deque(dict.fromkeys(partitions))))

    def next_slice(self, limit: int) -> list[DeltaStep]:
        """The next steps in order, at most `limit` (at least one while anything is pending)."""
        steps: list[DeltaStep] = []
        while self._deltas and len(steps) < max(1, limit):
            delta = self._deltas[0]
            if not delta.started:
                delta.started = True
                steps.append(StartDelta(delta.image))
            elif delta.partitions:
                topic_id, partition = delta.partitions.popleft()
                steps.append(ApplyPartition(delta.image, topic_id, partition))
            else:
                self._deltas.popleft()
                steps.append(FinishDelta(delta.image, delta.offset))
        return steps
