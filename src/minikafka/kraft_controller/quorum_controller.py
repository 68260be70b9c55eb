"""The active controller's shell: one event queue; generate records, append them to Raft, answer once committed.

Writes (registration, heartbeat, AlterPartition, CreateTopics, the session-timeout tick) run one at a time on
the queue: the pure `ControllerStateMachine` generates records and a response, the records are appended to the
Raft log, and the queue moves on while they commit (as Kafka's QuorumController does): the next write is
generated against the image including the proposed records, and each caller is answered once its records are
committed and replayed; a write that made no records is answered once every record proposed before it is.
Only the replay of committed records changes the committed image (rule 3); a leadership change drops the
proposed ones. Followers replay the same records as they commit, so a new active controller
already holds the whole image.
"""

from __future__ import annotations

import asyncio
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

import structlog

from minikafka.common.clock import monotonic_ms, new_random
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.event_log import log_events
from minikafka.common.purgatory import Purgatory
from minikafka.kraft_controller.collector_pause import CollectorPause
from minikafka.kraft_controller.config import ControllerConfig
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.control.controller_state_machine import ControllerStateMachine, describe_record_event
from minikafka.kraft_controller.metadata.records import Record, RecordDecodeError, decode_record, encode_record
from minikafka.kraft_controller.metadata.snapshot import decode_snapshot, encode_snapshot
from minikafka.kraft_controller.raft.append_linger import batch_linger
from minikafka.kraft_controller.raft.driver import NotLeaderError
from minikafka.kraft_controller.raft.messages import LogEntry

R = TypeVar("R")
TICK_INTERVAL_MS = 100
COMMIT_TIMEOUT_MS = 10_000
# A tick this late means the event loop did not run meanwhile (one long replay or generation): heartbeats that
# arrived then were not read, and that time is not held against the brokers' sessions.
DEAF_AFTER_MS = 1_000
QUEUE_DEADLINE_PASSED = "the controller's event queue reached the request after its deadline"
MAX_RECORDS_PER_APPEND = 1024  # an accumulated batch this big is appended without waiting out the linger
# Committed records replayed per loop turn: a follower's replay of one costs about 0.1 ms with its event, so a
# turn stays within tens of milliseconds where a CreateTopics of 10,000 partitions held the loop for seconds.
REPLAY_RECORDS_PER_TURN = 200
# A write's records applied to the proposed image, or encoded for the append, per loop turn (about 40 us each).
PROPOSE_RECORDS_PER_TURN = 200
OPERATIONS_PER_TURN = 100  # writes the queue generates in one loop turn (a small one costs 0.1-0.3 ms)
# Records handed to Raft in one append, a loop turn each (Kafka's maxRecordsPerBatch bounds a batch the same way):
# Raft builds an entry per record, writes the log and wakes its fetchers in that turn, and a fencing at 20,000
# partitions is a write of 20,001 records.
MAX_RECORDS_PER_BATCH = 1000


class MetadataRaft(Protocol):
    """What the controller needs from the Raft layer (kraft_controller.raft.driver implements it)."""

    node_id: int

    def leader(self) -> tuple[int | None, int]:
        """(leader id or None, epoch) as this node knows them."""

    def log_end_offset(self) -> int:
        """The offset the next proposed entry gets (as leader)."""

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
        self.state = ControllerStateMachine(ControlConfig.from_settings(config), rng or new_random())
        self.replayed_offset = -1
        self._active_epoch: int | None = None
        self._activation_offset: int | None = None  # replaying up to here makes this leader active
        self._pending_epoch: int | None = None
        # Appended writes awaiting their commit, in append order: offsets and deadlines rise, the ready and the
        # timed-out ones are always at the front.
        self._waiters: deque[_CommitWaiter] = deque()
        # Generated writes waiting for the append linger: (result, offset of its first record, caller).
        self._accumulated: list[tuple[ControllerResult[Any], int, asyncio.Future[Any]]] = []
        self._accumulated_records = 0
        self._records_generated = 0  # by every write so far: the queue's measure of a loop turn's generation work
        # (write, its caller, the clock time it must start by or None): Kafka's event deadline.
        self._queue: deque[tuple[Callable[[], Any], asyncio.Future[Any], int | None]] = deque()
        self._queue_waits = Purgatory()  # the queue's wait for the next write
        self._tasks: list[asyncio.Task[None]] = []
        self._bytes_since_snapshot = 0
        self._last_beat_ms = clock()  # the stall watch's last look at the clock
        # Committed entries not yet replayed (a slice a loop turn), and a high watermark heard meanwhile.
        self._unreplayed: deque[LogEntry] = deque()
        self._deferred_high_watermark: int | None = None
        self._replayer: asyncio.Task[None] | None = None
        self._collector = CollectorPause()
        self._log = structlog.get_logger()

    # ---- lifecycle ----

    def start(self) -> None:
        # The process's start-up since construction (opening the log, starting the server) is not a stall.
        self._last_beat_ms = self.clock()
        self._tasks = [
            asyncio.create_task(self._run_queue(), name="controller-event-queue"),
            asyncio.create_task(self._run_ticks(), name="controller-tick"),
            asyncio.create_task(self._watch_stalls(), name="controller-stall-watch"),
        ]

    async def stop(self) -> None:
        if self._replayer is not None:
            self._tasks.append(self._replayer)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._collector.release()

    @property
    def active(self) -> bool:
        leader, epoch = self.raft.leader()
        return leader == self.raft.node_id and self._active_epoch == epoch

    def not_controller(self) -> NotControllerError:
        leader, epoch = self.raft.leader()
        return NotControllerError(leader if leader != self.raft.node_id else None, epoch)

    # ---- Raft listener ----

    def handle_commit(self, entries: Sequence[LogEntry]) -> None:
        """Replay committed metadata records in order (every controller, active or not): at most
        REPLAY_RECORDS_PER_TURN now, the rest a slice per loop turn, so that a commit of tens of thousands of records
        never holds up heartbeats, fetches and the event queue for seconds. Their events are written before any
        waiter is answered."""
        self._unreplayed.extend(entries)
        if self._replayer is not None and not self._replayer.done():
            return  # the running replayer takes them in turn
        self._replay_slice()
        if not self._unreplayed:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop to yield to (a synchronous caller): replay it all now
            while self._unreplayed:
                self._replay_slice()
            return
        self._replayer = asyncio.create_task(self._replay_pending(), name="controller-replay")

    async def _replay_pending(self) -> None:
        while self._unreplayed:
            await asyncio.sleep(0)  # a slice per loop turn: heartbeats, fetches and the queue run in between
            self._replay_slice()

    def _replay_slice(self) -> None:
        replayed: list[tuple[str, dict[str, Any]]] = []
        for _ in range(min(REPLAY_RECORDS_PER_TURN, len(self._unreplayed))):
            entry = self._unreplayed.popleft()
            if entry.offset <= self.replayed_offset:
                continue
            record = self.state.proposed_record(entry.offset)
            if record is None:
                try:
                    record = decode_record(entry.data)
                except RecordDecodeError as error:
                    log_events(self._log, "info", replayed)  # the events stay in offset order
                    replayed.clear()
                    self._log.error("metadata_record_undecodable", offset=entry.offset, error=str(error))
                    self.replayed_offset = entry.offset
                    continue
            before = self.state.committed
            self.state.replay(record, entry.offset)
            event, fields = describe_record_event(record, self.state.committed, before)
            replayed.append((event, {"offset": entry.offset, **fields}))
            self.replayed_offset = entry.offset
            self._bytes_since_snapshot += len(entry.data)
        log_events(self._log, "info", replayed)
        self._collector.hold_while(self.state.proposed_records)
        self._advance(self.replayed_offset)
        if self._unreplayed:
            return
        if self._deferred_high_watermark is not None:
            high_watermark, self._deferred_high_watermark = self._deferred_high_watermark, None
            self._advance(high_watermark - 1)
        # metadata.log.max.record.bytes.between.snapshots: bound the log (and a lagging replica's catch-up).
        if self._bytes_since_snapshot >= self.config.metadata_max_records_between_snapshots:
            self._bytes_since_snapshot = 0
            self.raft.take_snapshot(*self.snapshot_data())
            self._log.info("metadata_snapshot_taken", end_offset=self.replayed_offset + 1)

    def handle_high_watermark(self, high_watermark: int) -> None:
        """Control entries (e.g. a leader's epoch-start entry) commit too; they count as replayed, once every
        record before them is."""
        if self._unreplayed:
            self._deferred_high_watermark = max(high_watermark, self._deferred_high_watermark or 0)
            return
        self._advance(high_watermark - 1)

    def handle_leader_change(self, epoch: int, leader_id: int | None, epoch_start_offset: int) -> None:
        """A new Raft leader: this node becomes active once it has replayed everything before its epoch."""
        self._active_epoch = None
        self._activation_offset = None
        self.state.revert_to_committed()
        self._collector.release()
        if leader_id == self.raft.node_id:
            self._activation_offset = epoch_start_offset
            self._pending_epoch = epoch
            self._advance(self.replayed_offset)
        for waiter in self._waiters:
            if not waiter.caller.done():
                waiter.caller.set_exception(self.not_controller())
        self._waiters.clear()
        for _result, _offset, done in self._accumulated:  # generated, never appended
            if not done.done():
                done.set_exception(self.not_controller())
        self._accumulated, self._accumulated_records = [], 0

    def handle_snapshot(self, data: bytes, end_offset: int) -> None:
        """Replace the image with a snapshot holding every record below `end_offset`."""
        self.state.load_snapshot(decode_snapshot(data), end_offset - 1)
        self._collector.release()  # nothing proposed is left
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
        while self._waiters and self._waiters[0].last_offset <= self.replayed_offset:
            waiter = self._waiters.popleft()
            if not waiter.caller.done():
                waiter.caller.set_result(waiter.result.response_at(waiter.base_offset))

    # ---- the event queue ----

    async def submit(self, operation: Callable[[], ControllerResult[R]], start_by_ms: int | None = None) -> R:
        """Run one generate-commit-replay operation on the event queue; NOT_CONTROLLER when not active;
        REQUEST_TIMED_OUT, not run at all, when the queue reaches it only after `start_by_ms` (clock time)."""
        if not self.active:
            raise self.not_controller()
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append((operation, done, start_by_ms))
        self._queue_waits.wake_all()
        return await done

    def read(self, query: Callable[[], R]) -> R:
        """A read of the committed image on the active controller (no queue: replays are atomic)."""
        if not self.active:
            raise self.not_controller()
        return query()

    async def _run_queue(self) -> None:
        """Generate each write as it comes (against the image with the earlier ones proposed); append what was
        generated to Raft in one batch (one log append, one fsync) once its linger passed: none when its first
        write found no earlier append awaiting its commit, else `controller.quorum.append.linger.ms`
        (`batch_linger`)."""
        loop = asyncio.get_running_loop()
        linger_s = self.config.append_linger_ms / 1000
        append_at = 0.0
        while True:
            # What is queued is generated in this loop turn, up to OPERATIONS_PER_TURN writes or writes of
            # PROPOSE_RECORDS_PER_TURN records: a wait per write would cost loop turns, and thousands at once (a
            # leader's AlterPartition for each of its partitions after a broker's restart, each of up to 200 changes)
            # held the loop for seconds.
            generated = 0
            records_before = self._records_generated
            while self._queue:
                if (
                    generated == OPERATIONS_PER_TURN
                    or self._records_generated - records_before >= PROPOSE_RECORDS_PER_TURN
                ):
                    generated = 0
                    records_before = self._records_generated
                    await asyncio.sleep(0)
                    continue
                generated += 1
                operation, done, start_by_ms = self._queue.popleft()
                if start_by_ms is not None and self.clock() > start_by_ms and not done.done():
                    done.set_exception(KafkaError(ErrorCode.REQUEST_TIMED_OUT, QUEUE_DEADLINE_PASSED))
                    continue
                if not self._accumulated:
                    append_at = loop.time() + batch_linger(linger_s, self._appended_uncommitted())
                await self._generate(operation, done)
                if self._accumulated_records >= MAX_RECORDS_PER_APPEND:
                    await self._append_accumulated()
            if self._accumulated and loop.time() >= append_at:
                await self._append_accumulated()
            elif not self._queue:
                await self._queue_waits.wait(max(0.0, append_at - loop.time()) if self._accumulated else None)

    def _appended_uncommitted(self) -> bool:
        """An earlier append still awaits its commit (and replay): a replication round is under way."""
        return self.raft.log_end_offset() > self.replayed_offset + 1

    async def _generate(self, operation: Callable[[], ControllerResult[Any]], done: asyncio.Future[Any]) -> None:
        """Run one write against the image with the writes before it proposed; answer at once when it makes no
        records, else keep it for the next append (its records take the next offsets). Its records are applied to
        the proposed image a slice per loop turn (nothing else generates meanwhile: this is the queue's task)."""
        if done.done():
            return
        if not self.active:
            done.set_exception(self.not_controller())
            return
        try:
            result = operation()
        except Exception as error:  # every failure goes back to its caller, the queue goes on
            done.set_exception(error)
            return
        offset = self.raft.log_end_offset() + self._accumulated_records
        if result.records and not await self._apply_proposed_in_slices(result.records, offset):
            done.set_exception(self.not_controller())  # leadership moved between slices: the proposals are gone
            return
        if result.later is not None:
            whole = await self._generate_later(result, offset)
            if whole is None:
                done.set_exception(self.not_controller())
                return
            result = whole
        if not result.records:
            self._answer_after_pending(result, offset, done)
            return
        self._accumulated.append((result, offset, done))
        self._accumulated_records += len(result.records)
        self._records_generated += len(result.records)

    async def _apply_proposed_in_slices(self, records: Sequence[Record], offset: int) -> bool:
        """Apply a write's records to the proposed image, PROPOSE_RECORDS_PER_TURN a loop turn (a CreateTopics of
        thousands of partitions, a fencing of a broker leading thousands, held the loop for seconds on a loaded
        machine: longer than the quorum's fetch timeout). False when this controller stopped being the active one
        in between."""
        epoch = self._active_epoch
        for start in range(0, len(records), PROPOSE_RECORDS_PER_TURN):
            if start:
                await asyncio.sleep(0)  # heartbeats, the quorum's fetches and replays run in between
                if not self.active or self._active_epoch != epoch:
                    return False
            self.state.apply_proposed(records[start : start + PROPOSE_RECORDS_PER_TURN], offset + start)
            self._collector.hold_while(self.state.proposed_records)
        return True

    async def _generate_later(self, result: ControllerResult[Any], offset: int) -> ControllerResult[Any] | None:
        """Generate the write's later records a slice a loop turn, each applied to the proposed image as it comes
        (a fencing of a broker in thousands of ISRs held the loop for seconds); the whole result, or None when this
        controller stopped being the active one in between."""
        assert result.later is not None
        records = list(result.records)
        epoch = self._active_epoch
        for part in result.later:
            if part:
                self.state.apply_proposed(part, offset + len(records))
                self._collector.hold_while(self.state.proposed_records)
                records += part
            await asyncio.sleep(0)  # heartbeats, the quorum's fetches and replays run in between
            if not self.active or self._active_epoch != epoch:
                return None
        return replace(result, records=tuple(records), later=None)

    def _answer_after_pending(self, result: ControllerResult[Any], offset: int, done: asyncio.Future[Any]) -> None:
        """A write that made no records was still generated from the image with every pending write in it: answer
        it once the last of those commits (Kafka's highest pending offset), at once when nothing is pending. An
        earlier answer could hand out state a failover then loses (a broker epoch, a partition epoch)."""
        if self._accumulated:  # rides with them: answered after their commit, failed with their append
            self._accumulated.append((result, offset, done))
            return
        if offset - 1 <= self.replayed_offset:
            done.set_result(result.response)
            return
        self._waiters.append(_CommitWaiter(offset - 1, offset, result, done, self.clock() + COMMIT_TIMEOUT_MS))

    async def _append_accumulated(self) -> None:
        """Append every accumulated write's records to Raft at once; each caller is answered on commit."""
        batch, self._accumulated, self._accumulated_records = self._accumulated, [], 0
        if not batch:
            return
        try:
            if not self.active:
                raise NotLeaderError("not the active controller")
            base_offset = await self._propose_in_batches(await self._encoded(batch))
        except Exception as error:
            self.state.revert_to_committed()  # generated against proposals that will not be appended
            self._collector.release()
            failure = self.not_controller() if isinstance(error, NotLeaderError) else error
            for _result, _offset, done in batch:
                if not done.done():
                    done.set_exception(failure)
            return
        assert base_offset == batch[0][1], f"Raft appended at {base_offset}, expected {batch[0][1]}"
        # Registered now, not in a later task: a leadership change right after the append must find them. Each
        # caller is answered on commit (in `_advance`), with NOT_CONTROLLER on a leadership change, or times out.
        deadline = self.clock() + COMMIT_TIMEOUT_MS
        self._waiters.extend(
            _CommitWaiter(offset + len(result.records) - 1, offset, result, done, deadline)
            for result, offset, done in batch
        )
        self._advance(self.replayed_offset)

    async def _propose_in_batches(self, encoded: list[bytes]) -> int:
        """Append `encoded` to Raft MAX_RECORDS_PER_BATCH a loop turn; the base offset of the first. NotLeaderError
        when this controller stopped being the active one in between: what was appended is the new leader's to keep
        or truncate, as after any append (Kafka's non-atomic results span batches the same way)."""
        epoch = self._active_epoch
        base_offset = None
        for start in range(0, len(encoded), MAX_RECORDS_PER_BATCH):
            if start:
                await asyncio.sleep(0)  # heartbeats, the quorum's fetches and replays run in between
                if not self.active or self._active_epoch != epoch:
                    raise NotLeaderError("not the active controller")
            offset = await self.raft.propose(encoded[start : start + MAX_RECORDS_PER_BATCH])
            if base_offset is None:
                base_offset = offset
            assert offset == base_offset + start, f"Raft appended at {offset}, expected {base_offset + start}"
        assert base_offset is not None
        return base_offset

    async def _encoded(self, batch: list[tuple[ControllerResult[Any], int, asyncio.Future[Any]]]) -> list[bytes]:
        """The batch's records encoded, PROPOSE_RECORDS_PER_TURN a loop turn; NotLeaderError when this controller
        stopped being the active one in between."""
        encoded: list[bytes] = []
        epoch = self._active_epoch
        for result, _, _ in batch:
            for record in result.records:
                if encoded and len(encoded) % PROPOSE_RECORDS_PER_TURN == 0:
                    await asyncio.sleep(0)
                    if not self.active or self._active_epoch != epoch:
                        raise NotLeaderError("not the active controller")
                encoded.append(encode_record(record))
        return encoded

    def _time_out_waiters(self, now_ms: int) -> None:
        """REQUEST_TIMED_OUT to callers whose records did not commit in COMMIT_TIMEOUT_MS: one check a tick, not
        a timer a write."""
        while self._waiters and self._waiters[0].deadline_ms <= now_ms:
            waiter = self._waiters.popleft()
            if not waiter.caller.done():
                message = f"offset {waiter.last_offset} did not commit"
                waiter.caller.set_exception(KafkaError(ErrorCode.REQUEST_TIMED_OUT, message))

    def _account_stall(self, now_ms: int) -> None:
        """Called every TICK_INTERVAL_MS by the stall watch and before each tick: a longer gap since the last call
        is time this loop did not run (a long replay or generation), when no heartbeat could be read."""
        gap_ms = now_ms - self._last_beat_ms
        self._last_beat_ms = now_ms
        if gap_ms > DEAF_AFTER_MS:
            self.state.on_deaf(gap_ms)
            self._log.warning("controller_stalled", stalled_ms=gap_ms)

    async def _watch_stalls(self) -> None:
        while True:
            self._account_stall(self.clock())
            await asyncio.sleep(TICK_INTERVAL_MS / 1000)

    def _tick(self) -> ControllerResult[None]:
        now_ms = self.clock()
        self._account_stall(now_ms)  # first: a stall just ended must not pass for the brokers' silence
        return self.state.tick(now_ms)

    async def _run_ticks(self) -> None:
        while True:
            await asyncio.sleep(TICK_INTERVAL_MS / 1000)
            self._time_out_waiters(self.clock())
            if not self.active:
                continue
            try:
                await self.submit(self._tick)
            except KafkaError:
                pass  # lost leadership between the check and the queue: the next leader ticks


@dataclass(slots=True)
class _CommitWaiter:
    """A caller whose write was appended: answered once `last_offset` is replayed."""

    last_offset: int
    base_offset: int  # of the write's first record (a registration's broker epoch is its record's offset)
    result: ControllerResult[Any]
    caller: asyncio.Future[Any]
    deadline_ms: int
