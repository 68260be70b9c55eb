"""Incremental fetch sessions, the follower's side (KIP-227, Kafka's FetchSessionHandler): which partitions the next
Fetch to one leader must list, and with which session id and epoch.

The first Fetch is full (epoch 0) and lists every partition; once the leader answers with a session id, each Fetch
lists only the partitions whose fetch state differs from what the leader's session holds, and names the partitions
no longer followed from that leader as forgotten. Any doubt about what the leader holds (an error, a lost answer)
goes back to a full Fetch that closes the old session.

The handler is told which partitions changed (`note_changed`) and looks only at those for an incremental Fetch,
so that an idle round costs what changed, not every partition followed; what it sends is what comparing every
partition would send. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
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
    full: dict[PartitionKey, PartitionFetchState] | None  # a full Fetch's partitions; None for an incremental one
    noted: int  # the handler's count of `note_changed` calls when it was built: the changes it covers


@dataclass
class FetchSessionHandler:
    session_id: int = INVALID_SESSION_ID
    next_epoch: int = INITIAL_EPOCH
    partitions: dict[PartitionKey, PartitionFetchState] = field(default_factory=dict)  # the leader's session
    # Partitions whose fetch state may differ from the session's, each with the `notes` count that last named it.
    pending: dict[PartitionKey, int] = field(default_factory=dict)
    notes: int = 0

    @property
    def full_next(self) -> bool:
        return self.next_epoch == INITIAL_EPOCH

    def note_changed(self, keys: Iterable[PartitionKey]) -> None:
        """The fetch states of `keys` were added, changed or removed since the last note."""
        self.notes += 1
        for key in keys:
            self.pending[key] = self.notes

    def build(self, wanted: Mapping[PartitionKey, PartitionFetchState]) -> FetchRequestData:
        """The next Fetch for `wanted`, every partition followed from the leader now (what the notes tell of)."""
        if self.full_next:
            full = dict(wanted)
            listed = sorted(full.values(), key=_key)  # by topic: a topic's partitions go in one entry
            return FetchRequestData(self.session_id, INITIAL_EPOCH, listed, [], full, self.notes)
        held = self.partitions
        to_send: list[PartitionFetchState] = []
        forgotten: list[PartitionKey] = []
        for key in sorted(self.pending):
            state = wanted.get(key)
            if state is None:
                if key in held:
                    forgotten.append(key)
            elif held.get(key) != state:
                to_send.append(state)
        return FetchRequestData(self.session_id, self.next_epoch, to_send, forgotten, None, self.notes)

    def handle_response(
        self, request: FetchRequestData, session_id: int, error: ErrorCode
    ) -> Mapping[PartitionKey, PartitionFetchState] | None:
        """Move the session on from the leader's answer to `request`. Returns the fetch states the answer's
        partitions were fetched with; None when its partitions are not to be used (as Kafka's handleResponse
        returning false): an error, or an answer from another session."""
        if error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
            self._start_over(INVALID_SESSION_ID)
            return None
        if error != ErrorCode.NONE:
            self._start_over(self.session_id)  # the next full fetch closes the session the leader may still hold
            return None
        if request.full is not None:
            self._settle(request.noted)
            if session_id == INVALID_SESSION_ID:
                self._start_over(INVALID_SESSION_ID)  # no session on offer (the leader's cache is full): full again
            else:
                self.session_id, self.next_epoch, self.partitions = session_id, 1, request.full
            return request.full
        if session_id != self.session_id:
            self._start_over(self.session_id)
            return None
        self._settle(request.noted)
        self.next_epoch = next_epoch(request.epoch)
        for key in request.forgotten:
            self.partitions.pop(key, None)
        for state in request.to_send:
            self.partitions[state.key] = state
        return self.partitions

    def handle_error(self) -> None:
        """The Fetch got no answer: the leader may or may not have moved the session on."""
        self._start_over(self.session_id)

    def _settle(self, noted: int) -> None:
        """The changes noted up to `noted` are in the leader's session now."""
        self.pending = {key: at for key, at in self.pending.items() if at > noted}

    def _start_over(self, close_session_id: int) -> None:
        # A new dict: an earlier full Fetch's partitions (handed out with its answer) stay as they were.
        self.session_id, self.next_epoch, self.partitions = close_session_id, INITIAL_EPOCH, {}


def _key(state: PartitionFetchState) -> PartitionKey:
    return state.key
