"""The Raft shell: owns the pure RaftNode, its file log, timers and gRPC transport.

Effects of one core call run in order, so persistence (fsync of the quorum state and log) happens before any
request or response leaves this process, with one exception, as in Kafka, whose Raft I/O thread is not its
controller's: the leader's appends are fsynced in a worker thread while its loop goes on (sending them to the
followers among other things), and a Fetch reaches the core only once every append made before it arrived is
durable, so the leader's high watermark never counts its own unflushed entries (Raft's majority includes the
leader). A Fetch that finds nothing new is parked (long poll) until entries are
appended, the high watermark moves, or its max wait passes. Used by controllers (voters) and by brokers, which
follow the metadata log as observers and keep their own copy on disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import grpc
import structlog
from google.protobuf.message import Message

from minikafka.common.clock import monotonic_ms, new_random, wall_ms
from minikafka.common.errors import ErrorCode
from minikafka.common.grpc_support import PeerChannels, connection_failed
from minikafka.common.purgatory import Purgatory
from minikafka.common.sequential_stream import SequentialStream
from minikafka.common.tls import TlsFiles
from minikafka.kraft_controller.raft import messages as m
from minikafka.kraft_controller.raft import wire
from minikafka.kraft_controller.raft.core import (
    AppendToLog,
    CommitAdvanced,
    DivergedBelowHighWatermark,
    Effect,
    InstallSnapshot,
    LeaderChanged,
    PersistQuorumState,
    RaftConfig,
    RaftNode,
    SaveSnapshot,
    Send,
    TruncateLog,
)
from minikafka.kraft_controller.raft.file_log import QuorumState, RaftFileLog
from minikafka.kraft_controller.raft.voter_changes import VoterChangeResult
from minikafka.pb import controller_pb2, raft_pb2, raft_pb2_grpc

TICK_INTERVAL_S = 0.02
FETCH_MAX_WAIT_MS = 500
SEND_GRACE_S = 1.0  # past a call's own timeout, the driver abandons it and reports the failure itself


class RaftListener(Protocol):
    def handle_commit(self, entries: Sequence[m.LogEntry]) -> None: ...

    def handle_high_watermark(self, high_watermark: int) -> None: ...

    def handle_leader_change(self, epoch: int, leader_id: int | None, epoch_start_offset: int) -> None: ...

    def handle_snapshot(self, data: bytes, end_offset: int) -> None: ...


class NotLeaderError(Exception):
    pass


class MetadataLogFailed(Exception):
    """The metadata log could not be written: this node answers nothing more and its process must end."""


class MetadataLogDiverged(Exception):
    """The leader asked this replica to truncate its metadata log below its high watermark: the quorum lost
    entries this replica knows committed. Fatal, as for a write error: its process must end."""


class RaftDriver:
    def __init__(
        self,
        node_id: int,
        voters: Mapping[int, str],
        data_dir: Path,
        config: RaftConfig,
        cluster_id: str,
        segment_bytes: int = 8 * 1024 * 1024,
        clock: Callable[[], int] = monotonic_ms,
        on_fatal: Callable[[Exception], None] = lambda _error: None,
        tls: TlsFiles | None = None,
        directory_id: str = "",
        voter_directories: Mapping[int, str] | None = None,
        observer_only: bool = False,
        own_endpoint: str = "",
        bootstrap_servers: Sequence[str] = (),
    ) -> None:
        """`voters`: the configured address book (controller.quorum.voters, maybe empty);
        `voter_directories`: each voter's directory id (KIP-853; None: voters named by id only);
        `observer_only`: this node was formatted without the voter set and never votes; `own_endpoint`: where a
        controller is reached; `bootstrap_servers`: controller.quorum.bootstrap.servers."""
        self.node_id = node_id
        self.tls = tls  # the node-to-node TLS material its calls to the voters use; None: plaintext
        # A write error on the metadata log is fatal, as in Kafka (its fault handler halts the process): after a
        # failed persist no answer may leave, or a vote or an acknowledgement would outlive what backs it.
        self._on_fatal = on_fatal
        self.failure: OSError | MetadataLogDiverged | None = None
        self.voter_addresses = dict(voters)
        self.cluster_id = cluster_id
        self.clock = clock
        now = clock()
        self.file_log = RaftFileLog(data_dir, segment_bytes, now)
        quorum = self.file_log.load_quorum_state() or QuorumState(0, None, None)
        self.core = RaftNode(
            node_id,
            dict(voter_directories) if voter_directories is not None else sorted(voters),
            config,
            new_random(),
            now,
            epoch=quorum.epoch,
            voted_for=quorum.voted_for,
            leader_id=quorum.leader_id,
            entries=self.file_log.load_entries(),
            snapshot=self.file_log.load_snapshot(),
            cluster_id=cluster_id,
            directory_id=directory_id,
            observer_only=observer_only,
            snapshot_voters=self.file_log.load_snapshot_voters(),
            snapshot_endpoints=self.file_log.load_snapshot_voter_endpoints(),
            voter_endpoints=voters,
            own_endpoint=own_endpoint,
            bootstrap_endpoints=bootstrap_servers,
        )
        self.listeners: list[RaftListener] = []
        self._stubs: dict[int, tuple[str, raft_pb2_grpc.RaftStub]] = {}  # node id -> (its address, stub)
        # Fetches ride one stream a destination: a new unary call costs the server a loop turn to accept.
        # Typed by the message class of the base: request_to_proto answers each request kind's message as one type.
        self._fetch_streams: dict[int, SequentialStream[Message, raft_pb2.RaftFetchResponse]] = {}
        self._peers = PeerChannels(tls)
        self._changes = 0  # counts moves of the entries or the HWM: a long poll re-reads when it changed
        self._parked = Purgatory()  # long polls waiting for the next change
        self._untold: list[InstallSnapshot | CommitAdvanced | LeaderChanged] = []  # for the listeners, in order
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ticker: asyncio.Task[None] | None = None
        self._unflushed = False  # the leader appended since its worker's fsync began (or none is under way)
        self._flushing = False
        self._durable = asyncio.Event()  # set while every append is fsynced: Fetches wait for it
        self._durable.set()
        self._log = structlog.get_logger()

    # ---- lifecycle ----

    def add_listener(self, listener: RaftListener) -> None:
        self.listeners.append(listener)

    def start(self) -> None:
        snapshot = self.file_log.load_snapshot()
        if snapshot is not None:
            for listener in self.listeners:
                listener.handle_snapshot(snapshot[1], snapshot[0].end_offset)
        self._ticker = asyncio.create_task(self._run_ticks(), name=f"raft-tick-{self.node_id}")

    async def stop(self, resign: bool = True) -> None:
        if resign:
            self._apply(self.core.resign(self.clock()))
            await asyncio.sleep(0)  # let EndQuorumEpoch requests leave
        if self._ticker is not None:
            self._ticker.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, *([self._ticker] if self._ticker else []), return_exceptions=True)
        for stream in self._fetch_streams.values():
            await stream.close()
        await self._peers.close()
        self.file_log.close()

    async def _run_ticks(self) -> None:
        while self.failure is None:
            self._apply(self.core.tick(self.clock()))
            await asyncio.sleep(TICK_INTERVAL_S)

    # ---- what the state machine sees ----

    def leader(self) -> tuple[int | None, int]:
        return self.core.leader_id, self.core.epoch

    def log_end_offset(self) -> int:
        return self.core.log_end_offset

    async def propose(self, entries: Sequence[bytes]) -> int:
        result, effects = self.core.propose(list(entries), self.clock())
        self._apply(effects)
        if self.failure is not None:
            raise NotLeaderError(f"the metadata log failed: {self.failure}")
        if result.base_offset is None:
            raise NotLeaderError(f"not the leader (leader {result.leader_id}, epoch {result.epoch})")
        return result.base_offset

    async def change_voters(
        self, change: m.AddVoter | m.RemoveVoter | m.UpgradeKRaftVersion, timeout_s: float
    ) -> VoterChangeResult:
        """AddRaftVoter or RemoveRaftVoter at this leader: refused at once, or answered once the VotersRecord
        commits (REQUEST_TIMED_OUT if it does not within `timeout_s`, NOT_LEADER_OR_FOLLOWER if leadership goes);
        answered once appended when the core's result awaits no commit (AddRaftVoter's ack_when_committed=false)."""
        now = self.clock()
        if isinstance(change, m.AddVoter):
            result, effects = self.core.add_voter(
                change.voter_id, change.directory_id, now, change.endpoint, change.ack_when_committed
            )
        elif isinstance(change, m.RemoveVoter):
            result, effects = self.core.remove_voter(change.voter_id, change.directory_id, now)
        else:
            result, effects = self.core.upgrade_kraft_version(now)
        self._apply(effects)
        if result.error_code != ErrorCode.NONE or not result.awaits_commit:
            return result
        epoch, deadline = self.core.epoch, now + timeout_s * 1000
        while self.core.high_watermark <= result.offset:
            if self.core.epoch != epoch or self.failure is not None:
                return VoterChangeResult(ErrorCode.NOT_LEADER_OR_FOLLOWER, "the leadership changed before the commit")
            left = deadline - self.clock()
            if left <= 0:
                return VoterChangeResult(ErrorCode.REQUEST_TIMED_OUT, "the voter set change did not commit in time")
            await self._parked.wait(min(left, 100) / 1000)
        return result

    def voter_endpoints(self) -> dict[int, str]:
        """Each voter's endpoint as this node knows it (its voter set's, learned or configured)."""
        return {v: e for v in sorted(self.core.voters) if (e := self.core.endpoint(v))}

    def controller_addresses(self) -> list[str]:
        """Where the controllers are: the voters' endpoints, then the configured ones and bootstrap servers."""
        found = list(self.voter_endpoints().values()) + list(self.voter_addresses.values())
        found += list(self.core.bootstrap_servers.values())
        return list(dict.fromkeys(found))

    def take_snapshot(self, end_offset: int, data: bytes) -> None:
        self._apply(self.core.take_snapshot(end_offset, data))

    def describe_quorum(self) -> controller_pb2.DescribeQuorumResponse:
        core = self.core
        # Kafka answers with epoch milliseconds; the core keeps this shell's monotonic clock, so shift its times.
        shift = wall_ms() - self.clock()
        response = controller_pb2.DescribeQuorumResponse(
            leader_id=core.leader_id if core.leader_id is not None else -1,
            leader_epoch=core.epoch,
            high_watermark=core.high_watermark,
        )
        for key, progress in sorted(core.progress.items()):
            target = response.current_voters if core.is_voter_key(key) else response.observers
            target.add(
                replica_id=key.id,
                replica_directory_id=key.directory_id,
                log_end_offset=progress.fetch_offset,
                last_fetch_timestamp=progress.last_fetch_ms + shift if progress.last_fetch_ms >= 0 else -1,
                last_caught_up_timestamp=progress.last_caught_up_ms + shift if progress.last_caught_up_ms >= 0 else -1,
            )
        for voter, endpoint in self.voter_endpoints().items():
            host, _, port = endpoint.rpartition(":")
            response.nodes.add(node_id=voter, host=host, port=int(port) if port.isdigit() else 0)
        return response

    # ---- effects ----

    def _apply(self, effects: Sequence[Effect]) -> None:
        if self.failure is not None:
            return
        try:
            self._execute(effects)
        except (OSError, MetadataLogDiverged) as error:  # the effects after it (a Send above all) are dropped
            self._halt(error)

    def _halt(self, error: OSError | MetadataLogDiverged) -> None:
        if self.failure is not None:
            return
        self.failure = error
        event = "metadata_log_write_failed" if isinstance(error, OSError) else "metadata_log_diverged"
        self._log.critical(event, node_id=self.node_id, error=str(error))
        self._on_fatal(error)

    @property
    def failure_reason(self) -> str:
        """Why the metadata log failed, for the process's last line ("" while it has not)."""
        if self.failure is None:
            return ""
        if isinstance(self.failure, MetadataLogDiverged):
            return f"its metadata log diverged below the high watermark ({self.failure})"
        return f"its metadata log could not be written ({self.failure})"

    def _execute(self, effects: Sequence[Effect]) -> None:
        already_untold = bool(self._untold)
        for effect in effects:
            match effect:
                case PersistQuorumState():
                    self.file_log.save_quorum_state(QuorumState(effect.epoch, effect.voted_for, effect.leader_id))
                case AppendToLog():
                    # A lone voter's append commits at once: it must be durable before anything else happens.
                    in_background = self.core.is_leader and len(self.core.voters) > 1
                    self.file_log.append(effect.entries, self.clock(), flush=not in_background)
                    if in_background:
                        self._flush_in_background()
                    else:
                        self._flushed_everything()
                    self._notify_change()
                case TruncateLog():
                    self.file_log.truncate(effect.end_offset, "raft diverging epoch")
                    self._flushed_everything()
                case DivergedBelowHighWatermark():
                    raise MetadataLogDiverged(
                        f"the leader asked for a truncation to offset {effect.end_offset}, below the high watermark "
                        f"{effect.high_watermark}"
                    )
                case SaveSnapshot():
                    self.file_log.save_snapshot(effect.snapshot_id, effect.data, effect.voters, effect.endpoints)
                case InstallSnapshot():
                    self.file_log.save_snapshot(effect.snapshot_id, effect.data, effect.voters, effect.endpoints)
                    self.file_log.reset_to(effect.snapshot_id.end_offset)
                    self._untold.append(effect)
                case CommitAdvanced():
                    self._untold.append(effect)
                    self._notify_change()
                case LeaderChanged():
                    self._untold.append(effect)
                    self._notify_change()
                case Send():
                    self._spawn(self._send(effect.destination, effect.request))
        if self._untold and not already_untold:  # while any are untold, _tell_untold is scheduled
            # The listeners hear in order, in a later callback than the tasks spawned above send their requests
            # in: a follower's next fetch leaves before it replays what the last one committed. The controller's
            # replay of a commit takes a millisecond or more, which the leader's next append waited out.
            asyncio.get_running_loop().call_soon(self._tell_untold)

    def _tell_untold(self) -> None:
        untold, self._untold = self._untold, []
        for effect in untold:
            match effect:
                case InstallSnapshot():
                    for listener in self.listeners:
                        listener.handle_snapshot(effect.data, effect.snapshot_id.end_offset)
                case CommitAdvanced():
                    data_entries = [e for e in effect.entries if not e.control]
                    for listener in self.listeners:
                        if data_entries:
                            listener.handle_commit(data_entries)
                        listener.handle_high_watermark(effect.high_watermark)
                case LeaderChanged():
                    for listener in self.listeners:
                        listener.handle_leader_change(effect.epoch, effect.leader_id, effect.epoch_start_offset)

    def _flush_in_background(self) -> None:
        self._unflushed = True
        self._durable.clear()
        if not self._flushing:
            self._flushing = True
            self._spawn(self._flush_appends())

    async def _flush_appends(self) -> None:
        """fsync in a worker thread until no append is left unflushed; an I/O error is fatal (see `_halt`)."""
        try:
            while self._unflushed:
                self._unflushed = False
                fsync, then = self.file_log.detached_fsync(self.clock())
                await self._run_fsync(fsync)
                then()
        except OSError as error:  # Fetches keep waiting for durability that never comes, until the process ends
            self._unflushed = True
            self._halt(error)
            return
        finally:
            self._flushing = False
        self._durable.set()

    async def _run_fsync(self, fsync: Callable[[], None]) -> None:
        await asyncio.to_thread(fsync)

    def _flushed_everything(self) -> None:
        """The log was fsynced on this thread: every append so far is durable, the worker's too."""
        self._unflushed = False
        self._durable.set()

    def _notify_change(self) -> None:
        self._changes += 1
        self._parked.wake_all()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ---- client side ----

    def _stub(self, node_id: int) -> raft_pb2_grpc.RaftStub | None:
        address = self.core.endpoint(node_id)
        if address is None:
            return None
        known = self._stubs.get(node_id)
        if known is not None and known[0] != address:  # the node moved (UpdateRaftVoter): a new channel there
            self._reconnect(node_id)
            known = None
        if known is None:
            known = (address, raft_pb2_grpc.RaftStub(self._peers.get(address)))
            self._stubs[node_id] = known
        return known[1]

    def _reconnect(self, node_id: int) -> None:
        """The next request to `node_id` resolves its name again on a new channel and stream (a restarted
        voter's container may have a new address; the old connection may lead nowhere)."""
        known = self._stubs.pop(node_id, None)
        stream = self._fetch_streams.pop(node_id, None)
        if stream is not None:
            self._spawn(stream.close())
        address = known[0] if known is not None else self.core.endpoint(node_id)
        if address is not None:
            self._peers.retire(address)

    async def _send(self, destination: int, request: m.RaftRequest) -> None:
        stub = self._stub(destination)
        if stub is None:
            self._apply(self.core.handle_failure(destination, request, self.clock()))
            return
        message = wire.request_to_proto(request)
        call: Callable[..., Awaitable[Any]]
        if isinstance(request, m.FetchRequest):
            if destination not in self._fetch_streams:
                self._fetch_streams[destination] = SequentialStream(stub.FetchStream)
            call = self._fetch_streams[destination].call
            timeout = (FETCH_MAX_WAIT_MS + self.core.config.request_timeout_ms) / 1000
        else:
            call = {
                m.VoteRequest: stub.Vote,
                m.BeginQuorumEpochRequest: stub.BeginQuorumEpoch,
                m.EndQuorumEpochRequest: stub.EndQuorumEpoch,
                m.FetchSnapshotRequest: stub.FetchSnapshot,
                m.UpdateVoterRequest: stub.UpdateRaftVoter,
            }[type(request)]
            timeout = self.core.config.request_timeout_ms / 1000
        try:
            # A hard bound over the call's own timeout: a call that never ends (a stream write that never returns,
            # a stream lock held by such a call) is still reported, or the core would keep waiting for its answer.
            async with asyncio.timeout(timeout + SEND_GRACE_S):
                response = await call(message, timeout=timeout)
        except grpc.RpcError as error:
            if connection_failed(error):
                self._reconnect(destination)
            self._apply(self.core.handle_failure(destination, request, self.clock()))
            return
        except Exception as error:  # any failure must reach the core, which otherwise waits for this answer
            name = type(request).__name__
            self._log.error("raft_send_failed", destination=destination, request=name, error=repr(error))
            self._apply(self.core.handle_failure(destination, request, self.clock()))
            return
        self._apply(self.core.handle_response(destination, wire.response_from_proto(response), self.clock(), request))

    # ---- server side ----

    async def serve(self, sender: int, request: m.RaftRequest) -> m.RaftResponse:
        if isinstance(request, m.FetchRequest) and not self._durable.is_set():
            # Its offset may acknowledge appends this leader sent before fsyncing them. Once they are durable
            # it can count: anything appended while it waited was sent after it arrived, so it acknowledges none.
            await self._durable.wait()
        seen = self._changes
        response, effects = self.core.handle_request(sender, request, self.clock())
        self._apply(effects)
        self._raise_if_failed()
        if isinstance(request, m.FetchRequest) and self._worth_parking(response):
            deadline = self.clock() + FETCH_MAX_WAIT_MS
            while self._worth_parking(response) and self.clock() < deadline:
                # A change while this request was handled is read at once; else park until one or the max wait.
                if self._changes == seen and not await self._parked.wait((deadline - self.clock()) / 1000):
                    break
                seen = self._changes
                response, effects = self.core.handle_request(sender, request, self.clock())
                self._apply(effects)
                self._raise_if_failed()
        return response

    def _raise_if_failed(self) -> None:
        if self.failure is not None:
            raise MetadataLogFailed(str(self.failure))

    @staticmethod
    def _worth_parking(response: m.RaftResponse) -> bool:
        return (
            isinstance(response, m.FetchResponse)
            and response.error_code == ErrorCode.NONE
            and not response.entries
            and response.diverging_epoch is None
            and response.snapshot_id is None
        )


class RaftService(raft_pb2_grpc.RaftServicer):
    """The Raft RPCs a voter serves to other voters and to observers."""

    def __init__(self, driver: RaftDriver) -> None:
        self.driver = driver

    def register(self, server: grpc.aio.Server) -> None:
        raft_pb2_grpc.add_RaftServicer_to_server(self, server)

    async def _answer(self, sender: int, request: m.RaftRequest, context: Any) -> Any:
        try:
            return wire.response_to_proto(await self.driver.serve(sender, request))
        except MetadataLogFailed as error:  # the caller sees a failed call, as from a node that is going away
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the metadata log failed: {error}")

    async def Vote(self, request: raft_pb2.VoteRequest, context: Any) -> raft_pb2.VoteResponse:
        return await self._answer(request.candidate_id, wire.vote_request(request), context)

    async def BeginQuorumEpoch(
        self, request: raft_pb2.BeginQuorumEpochRequest, context: Any
    ) -> raft_pb2.BeginQuorumEpochResponse:
        return await self._answer(request.leader_id, wire.begin_epoch_request(request), context)

    async def EndQuorumEpoch(
        self, request: raft_pb2.EndQuorumEpochRequest, context: Any
    ) -> raft_pb2.EndQuorumEpochResponse:
        return await self._answer(request.leader_id, wire.end_epoch_request(request), context)

    async def Fetch(self, request: raft_pb2.RaftFetchRequest, context: Any) -> raft_pb2.RaftFetchResponse:
        return await self._answer(request.replica_id, wire.fetch_request(request), context)

    async def FetchStream(
        self, requests: AsyncIterator[raft_pb2.RaftFetchRequest], context: Any
    ) -> AsyncIterator[raft_pb2.RaftFetchResponse]:
        """A replica's fetches on one stream: it sends the next one after reading the answer."""
        async for request in requests:
            yield await self.Fetch(request, context)

    async def FetchSnapshot(
        self, request: raft_pb2.FetchSnapshotRequest, context: Any
    ) -> raft_pb2.FetchSnapshotResponse:
        return await self._answer(request.replica_id, wire.fetch_snapshot_request(request), context)

    async def UpdateRaftVoter(
        self, request: raft_pb2.UpdateRaftVoterRequest, context: Any
    ) -> raft_pb2.UpdateRaftVoterResponse:
        return await self._answer(request.voter_id, wire.update_voter_request(request), context)
