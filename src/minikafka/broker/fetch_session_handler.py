"""Incremental fetch sessions, the follower's side (KIP-227, Kafka's FetchSessionHandler): which partitions the next
Fetch to one leader must list, and with which session id and epoch.

The first Fetch is full (epoch 0) and lists every partition; once the leader answers with a session id, each Fetch
lists only the partitions whose fetch state differs from what the leader's session holds, and names the partitions
no longer followed from that leader as forgotten. Any doubt about what the leader holds (an error, a lost answer)
goes back to a full Fetch that closes the old session. Pure: no I/O, no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from minikafka.broker.fetch_session import (
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    PartitionFetchState,
    PartitionKey,
    next_epoch,
)
from minikafka.common.errors import ErrorCode


@dataclass(frozen=True)
class FetchRequestData:
    session_id: int
    epoch: int
    to_send: list[PartitionFetchState]
    forgotten: list[PartitionKey]
    session_partitions: dict[PartitionKey, PartitionFetchState]  # what the leader holds once this is answered


@dataclass
class FetchSessionHandler:
    session_id: int = INVALID_SESSION_ID
    next_epoch: int = INITIAL_EPOCH
    partitions: dict[PartitionKey, PartitionFetchState] = field(default_factory=dict)  # the leader's session

    def build(self, wanted: dict[PartitionKey, PartitionFetchState]) -> FetchRequestData:
        if self.next_epoch == INITIAL_EPOCH:
            return FetchRequestData(self.session_id, INITIAL_EPOCH, list(wanted.values()), [], wanted)
        held = self.partitions
        to_send = [state for key, state in wanted.items() if held.get(key) != state]
        forgotten = [key for key in held if key not in wanted]
        return FetchRequestData(self.session_id, self.next_epoch, to_send, forgotten, wanted)

    def handle_response(self, request: FetchRequestData, session_id: int, error: ErrorCode) -> None:
        if error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
            self._start_over(INVALID_SESSION_ID)
        elif error != ErrorCode.NONE:
            self._start_over(self.session_id)  # the next full fetch closes the session the leader may still hold
        elif request.epoch == INITIAL_EPOCH:
            if session_id == INVALID_SESSION_ID:
                self._start_over(INVALID_SESSION_ID)  # no session on offer (the leader's cache is full): full again
            else:
                self.session_id, self.next_epoch, self.partitions = session_id, 1, request.session_partitions
        elif session_id != self.session_id:
            self._start_over(self.session_id)
        else:
            self.next_epoch, self.partitions = next_epoch(request.epoch), request.session_partitions

    def handle_error(self) -> None:
        """The Fetch got no answer: the leader may or may not have moved the session on."""
        self._start_over(self.session_id)

    def _start_over(self, close_session_id: int) -> None:
        self.session_id, self.next_epoch, self.partitions = close_session_id, INITIAL_EPOCH, {}
