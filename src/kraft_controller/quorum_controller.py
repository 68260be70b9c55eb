"""The active controller's shell: one event queue; generate records, append them to Raft, answer once committed.

Writes (registration, heartbeat, AlterPartition, CreateTopics, the session-timeout tick) run one at a time on
the queue: the pure `ControllerStateMachine` generates records and a response, the records are appended to the
Raft log, and the queue moves on while they commit (as Kafka's QuorumController does): the next write is
generated against the image including the proposed records, and each caller is answered once its records are
committed and replayed. Only the replay of committed records changes the committed image (rule 3); a leadership
change drops the proposed ones. Followers replay the same records as they commit, so a new active controller
already holds the whole image.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import structlog

from common.clock import monotonic_ms
from common.errors import ErrorCode, KafkaError
from kraft_controller.config import ControllerConfig
from kraft_controller.control.control_config import ControlConfig
from kraft_controller.control.controller_result import ControllerResult
from kraft_controller.control.controller_state_machine import ControllerStateMachine, describe_record_event
from kraft_controller.metadata.records import RecordDecodeError, decode_record, encode_record
from kraft_controller.metadata.snapshot import decode_snapshot, encode_snapshot
from kraft_controller.raft.driver import NotLeaderError
from kraft_controller.raft.messages import LogEntry

R = TypeVar("R")
TICK_INTERVAL_MS = 100
COMMIT_TIMEOUT_S = 10.0


class MetadataRaft(Protocol):
    """What the controller needs from the Raft layer (kraft_controller.raft.driver implements it)."""

    node_id: int

    def leader(self) -> tuple[int | None, int]:
        """(leader id or None, epoch) as this node knows them."""

    async def propose(self, entries: Sequence[bytes]) -> int:
        """Append to the log as leader; returns the base offset (raises NotLeaderError)."""

    def take_snapshot(self, end_offset: int, data: bytes) -> None:
        """Replace the log below `end_offset` (committed, replayed) with `data`."""


class NotControllerError(KafkaError):
    def __init__(self, leader_id: int | None, epoch: int) -> None:
        super().__init__(ErrorCode.NOT_CONTROLLER, f"the active controller is {leader_id}")
        self.leader_id = leader_id
        self.epoch = epoch


class QuorumController:
    def __init__(
        self,
        config: ControllerConfig,
        raft: MetadataRaft,
        clock: Callable[[], int] = monotonic_ms,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self.raft = raft
        self.clock = clock
        self.state = ControllerStateMachine(ControlConfig.from_settings(config), rng or random.Random())
        self.replayed_offset = -1
        self._active_epoch: int | None = None
        self._activation_offset: int | None = None  # replaying up to here makes this leader active
        self._pending_epoch: int | None = None
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._queue: asyncio.Queue[tuple[Callable[[], Any], asyncio.Future[Any]]] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._bytes_since_snapshot = 0
        self._log = structlog.get_logger()

    # ---- lifecycle ----

    def start(self) -> None:
        self._tasks = [
            asyncio.create_task(self._run_queue(), name="controller-event-queue"),
            asyncio.create_task(self._run_ticks(), name="controller-tick"),
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    @property
    def active(self) -> bool:
        leader, epoch = self.raft.leader()
        return leader == self.raft.node_id and self._active_epoch == epoch

    def not_controller(self) -> NotControllerError:
        leader, epoch = self.raft.leader()
        return NotControllerError(leader if leader != self.raft.node_id else None, epoch)

    # ---- Raft listener ----

    def handle_commit(self, entries: Sequence[LogEntry]) -> None:
        """Replay committed metadata records in order (every controller, active or not)."""
        for entry in entries:
            if entry.offset <= self.replayed_offset:
                continue
            try:
                record = decode_record(entry.data)
            except RecordDecodeError as error:
                self._log.error("metadata_record_undecodable", offset=entry.offset, error=str(error))
                self.replayed_offset = entry.offset
                continue
            self.state.replay(record, entry.offset)
            event, fields = describe_record_event(record, self.state.committed)
            self._log.info(event, offset=entry.offset, **fields)
            self.replayed_offset = entry.offset
            self._bytes_since_snapshot += len(entry.data)
        self._advance(self.replayed_offset)
        # metadata.log.max.record.bytes.between.snapshots: bound the log (and a lagging replica's catch-up).
        if self._bytes_since_snapshot >= self.config.metadata_max_records_between_snapshots:
            self._bytes_since_snapshot = 0
            self.raft.take_snapshot(*self.snapshot_data())
            self._log.info("metadata_snapshot_taken", end_offset=self.replayed_offset + 1)

    def handle_high_watermark(self, high_watermark: int) -> None:
        """Control entries (e.g. a leader's epoch-start entry) commit too; they count as replayed."""
        self._advance(high_watermark - 1)

    def handle_leader_change(self, epoch: int, leader_id: int | None, epoch_start_offset: int) -> None:
        """A new Raft leader: this node becomes active once it has replayed everything before its epoch."""
        self._active_epoch = None
        self._activation_offset = None
        self.state.revert_to_committed()
        if leader_id == self.raft.node_id:
            self._activation_offset = epoch_start_offset
            self._pending_epoch = epoch
            self._advance(self.replayed_offset)
        for _offset, waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(self.not_controller())
        self._waiters = []

    def handle_snapshot(self, data: bytes, end_offset: int) -> None:
        """Replace the image with a snapshot holding every record below `end_offset`."""
        self.state.load_snapshot(decode_snapshot(data), end_offset - 1)
        self.replayed_offset = end_offset - 1
        self._log.info("metadata_snapshot_loaded", end_offset=end_offset)
        self._advance(end_offset - 1)

    def snapshot_data(self) -> tuple[int, bytes]:
        """(end offset, data) of a snapshot of the committed image, for Raft to replace its log prefix."""
        return self.replayed_offset + 1, encode_snapshot(self.state.committed.to_records())

    def _advance(self, offset: int) -> None:
        if offset > self.replayed_offset:
            self.replayed_offset = offset
        if self._activation_offset is not None and self.replayed_offset >= self._activation_offset:
            self._active_epoch = self._pending_epoch
            self._activation_offset = None
            self.state.on_become_active(self.clock())
            self._log.info("controller_activated", epoch=self._active_epoch, replayed_offset=self.replayed_offset)
        ready = [w for w in self._waiters if w[0] <= self.replayed_offset]
        self._waiters = [w for w in self._waiters if w[0] > self.replayed_offset]
        for _offset, waiter in ready:
            if not waiter.done():
                waiter.set_result(None)

    # ---- the event queue ----

    async def submit(self, operation: Callable[[], ControllerResult[R]]) -> R:
        """Run one generate-commit-replay operation on the event queue; NOT_CONTROLLER when not active."""
        if not self.active:
            raise self.not_controller()
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        await self._queue.put((operation, done))
        return await done

    def read(self, query: Callable[[], R]) -> R:
        """A read of the committed image on the active controller (no queue: replays are atomic)."""
        if not self.active:
            raise self.not_controller()
        return query()

    async def _run_queue(self) -> None:
        while True:
            operation, done = await self._queue.get()
            if done.done():
                continue
            try:
                result, base_offset = await self._append(operation)
            except Exception as error:  # every failure goes back to the caller, the queue goes on
                if not done.done():
                    done.set_exception(error)
                continue
            if base_offset is None:
                done.set_result(result.response)
            else:  # answered on commit; the queue does not wait for it
                self._answer_on_commit(result, base_offset, done)

    async def _append(self, operation: Callable[[], ControllerResult[Any]]) -> tuple[ControllerResult[Any], int | None]:
        """Generate and append to the Raft log: (result, base offset), or no offset when there are no records."""
        if not self.active:
            raise self.not_controller()
        result = operation()
        if not result.records:
            return result, None
        try:
            base_offset = await self.raft.propose([encode_record(record) for record in result.records])
        except NotLeaderError:
            raise self.not_controller() from None
        self.state.apply_proposed(result.records, base_offset)
        return result, base_offset

    def _answer_on_commit(self, result: ControllerResult[Any], base_offset: int, done: asyncio.Future[Any]) -> None:
        """Answer once the last record is replayed; NOT_CONTROLLER on a leadership change, or a timeout."""
        last = base_offset + len(result.records) - 1
        # Registered now, not in a later task: a leadership change right after the append must find it.
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((last, waiter))
        self._advance(self.replayed_offset)
        timer = asyncio.get_running_loop().call_later(COMMIT_TIMEOUT_S, _time_out, waiter, last)

        def answer(waiter: asyncio.Future[None]) -> None:
            timer.cancel()
            if done.done():
                return
            error = waiter.exception()
            if error is not None:
                done.set_exception(error)
            else:
                done.set_result(result.response_at(base_offset))

        waiter.add_done_callback(answer)

    async def _run_ticks(self) -> None:
        while True:
            await asyncio.sleep(TICK_INTERVAL_MS / 1000)
            if not self.active:
                continue
            try:
                await self.submit(lambda: self.state.tick(self.clock()))
            except KafkaError:
                pass  # lost leadership between the check and the queue: the next leader ticks


def _time_out(waiter: asyncio.Future[None], offset: int) -> None:
    if not waiter.done():
        waiter.set_exception(KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"offset {offset} did not commit"))
