"""A deterministic simulation of the KRaft core: one scheduler, a manual clock, a seeded faulty network.

Every node is a `RaftNode` plus a "disk" holding only what its persistence effects wrote; a crash throws the
node's memory away and a restart rebuilds it from that disk. The network delays, drops, duplicates and reorders
messages and can cut links. A wipe throws the disk away too: the node comes back empty in a new metadata log
directory (KIP-853's directory id), formatted without the voter set. Invariants are checked after every event.

Messages are routed by address, as on a real network: a node reaches another at the endpoint it believes that
node has (its VotersRecords, the leaders' announcements, its address book, its bootstrap servers), and a message
to an address nobody listens at fails. With `endpoint_changes`, a controller may restart on a new address (it
must then UpdateRaftVoter its endpoint), and the nodes formatted without the voter set know only bootstrap
servers (KIP-853's controller.quorum.bootstrap.servers).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import random
from dataclasses import dataclass, field
from typing import Any

from minikafka.kraft_controller.raft.core import (
    AppendToLog,
    CommitAdvanced,
    InstallSnapshot,
    LeaderChanged,
    PersistQuorumState,
    RaftConfig,
    RaftNode,
    SaveSnapshot,
    Send,
    TruncateLog,
)
from minikafka.kraft_controller.raft.messages import FetchResponse, LogEntry, SnapshotId
from minikafka.kraft_controller.raft.voter_set import voters_of

TICK_MS = 10
LONG_POLL_MS = 20  # the shell parks an empty Fetch this long (KRaft's fetch max wait)


class InvariantViolation(AssertionError):
    pass


@dataclass
class Disk:
    epoch: int = 0
    voted_for: int | None = None
    leader_id: int | None = None
    entries: list[LogEntry] = field(default_factory=list)
    snapshot: tuple[SnapshotId, bytes] | None = None
    snapshot_voters: dict[int, str] | None = None
    snapshot_endpoints: dict[int, str] | None = None

    @property
    def end_offset(self) -> int:
        start = self.snapshot[0].end_offset if self.snapshot else 0
        return start + len(self.entries)

    @property
    def last_epoch(self) -> int:
        if self.entries:
            return self.entries[-1].epoch
        return self.snapshot[0].epoch if self.snapshot else 0


@dataclass
class SimNode:
    node_id: int
    disk: Disk
    raft: RaftNode | None
    committed: list[LogEntry] = field(default_factory=list)  # what its state machine applied, in order
    commit_offset: int = 0


class RaftSimulation:
    def __init__(
        self,
        seed: int,
        voters: int = 3,
        observers: int = 1,
        drop_rate: float = 0.05,
        pre_vote: bool = True,
        directory_check: bool = True,
        extra_controllers: int = 0,
        endpoint_changes: bool = False,
    ) -> None:
        """`extra_controllers`: controllers formatted without the voter set (KIP-853), observers until added."""
        self.rng = random.Random(seed)
        self.now = 0
        self.voter_ids = list(range(1, voters + 1))
        self.controller_ids = self.voter_ids + [voters + 1 + i for i in range(extra_controllers)]
        self.node_ids = self.controller_ids + [100 + i for i in range(observers)]
        self.config = RaftConfig(
            election_timeout_ms=150, fetch_timeout_ms=300, election_backoff_max_ms=100, pre_vote_enable=pre_vote
        )
        if endpoint_changes:  # UpdateRaftVoter is retried once a request timeout: keep it short, as the timers
            self.config = dataclasses.replace(self.config, request_timeout_ms=300)
        self.endpoint_changes = endpoint_changes
        self.endpoints = {i: f"node-{i}:9000" for i in self.node_ids}  # where each node listens now
        self.initial_endpoints = dict(self.endpoints)  # what the configuration files say
        self.moves = 0
        self.drop_rate = drop_rate
        # On: the voter set names each voter's directory (KIP-853); off: ids only (a static voter set).
        self.directory_check = directory_check
        self.directories = {i: f"dir-{i}-0" for i in self.node_ids}
        self.formatted_directories = dict(self.directories)  # the directories the initial voter set names
        self.wipes = 0
        self.voter_changes: dict[str, int] = {}  # outcome (error name) -> count
        self.duplicate_rate = 0.02
        self.cut: set[frozenset[int]] = set()
        # Crashed without a trace on the wire: requests to them and their answers vanish, and nobody is told (a
        # host gone with its connections still open, rather than a refused connection).
        self.silent: set[int] = set()
        self.queue: list[tuple[int, int, str, Any]] = []
        self.sequence = itertools.count()
        self.nodes = {i: SimNode(i, Disk(), None) for i in self.node_ids}
        for node_id in self.node_ids:
            self._boot(node_id)
            self._schedule(self.rng.randint(0, TICK_MS), "tick", node_id)
        self.leaders_by_epoch: dict[int, int] = {}
        self.committed_history: dict[int, LogEntry] = {}
        # Log Matching, checked on every append anywhere: (offset, epoch) names one entry whose predecessor has one
        # epoch; by induction two logs sharing (offset, epoch) then share the whole prefix.
        self.appended: dict[tuple[int, int], tuple[bytes, bool, int]] = {}
        self.proposed = 0
        self.events = 0

    # ---- scheduling ----

    def _schedule(self, delay: int, kind: str, payload: Any) -> None:
        heapq.heappush(self.queue, (self.now + delay, next(self.sequence), kind, payload))

    def _boot(self, node_id: int) -> None:
        node = self.nodes[node_id]
        disk = node.disk
        voters: list[int] | dict[int, str] = (
            {v: self.formatted_directories[v] for v in self.voter_ids} if self.directory_check else self.voter_ids
        )
        book = {v: self.initial_endpoints[v] for v in self.voter_ids}
        bootstrap: list[str] = []
        observer_only = self.directory_check and self._formatted_without_voters(node_id)
        if self.endpoint_changes and observer_only and node_id not in self.voter_ids:
            # A controller to be added later, or the observer: only controller.quorum.bootstrap.servers.
            voters, book, bootstrap = {}, {}, [self.initial_endpoints[v] for v in self.voter_ids]
        node.raft = RaftNode(
            node_id,
            voters,
            self.config,
            random.Random(self.rng.random()),
            self.now,
            epoch=disk.epoch,
            voted_for=disk.voted_for,
            leader_id=disk.leader_id,
            entries=list(disk.entries),
            snapshot=disk.snapshot,
            directory_id=self.directories[node_id],
            observer_only=observer_only,
            snapshot_voters=disk.snapshot_voters,
            snapshot_endpoints=disk.snapshot_endpoints,
            voter_endpoints=book,
            own_endpoint=self.endpoints[node_id] if node_id in self.controller_ids else "",
            bootstrap_endpoints=bootstrap,
        )
        node.committed = []
        node.commit_offset = disk.snapshot[0].end_offset if disk.snapshot else 0

    def crash(self, node_id: int, silently: bool = False) -> None:
        self.nodes[node_id].raft = None
        if silently:
            self.silent.add(node_id)

    def restart(self, node_id: int) -> None:
        if self.nodes[node_id].raft is None:
            self.silent.discard(node_id)
            self._boot(node_id)

    def _formatted_without_voters(self, node_id: int) -> bool:
        initial = node_id in self.voter_ids
        return not initial or self.directories[node_id] != self.formatted_directories[node_id]

    def wipe(self, node_id: int) -> None:
        """The node's disk is lost: it comes back empty, in a new directory."""
        self.crash(node_id)
        self.wipes += 1
        self.nodes[node_id].disk = Disk()
        self.directories[node_id] = f"dir-{node_id}-{self.wipes}"
        self.restart(node_id)

    def move(self, node_id: int) -> None:
        """The controller restarts listening at a new address (its disk kept)."""
        self.crash(node_id)
        self.moves += 1
        self.endpoints[node_id] = f"node-{node_id}:{9000 + self.moves}"
        self.restart(node_id)

    def endpoints_settled(self) -> bool:
        """Every live node reaches every voter of its voter set where that voter listens now, and the voter sets
        of the live leaders name those endpoints."""
        for node in self.nodes.values():
            raft = node.raft
            if raft is None:
                continue
            if any(raft.endpoint(v) != self.endpoints[v] for v in raft.voters):
                return False
            if raft.is_leader and any(raft.record_endpoints.get(v) != self.endpoints[v] for v in raft.voters):
                return False
        return True

    def move_allowed(self) -> bool:
        """An operator moves one controller at a time, once the last move is known everywhere, and while its voter
        set keeps a majority without the one moving: a node that only learns a voter's new address from the
        leader's VotersRecord cannot reach it before then (no request names its sender's endpoint)."""
        if not self.endpoints_settled():
            return False
        for node in self.nodes.values():
            raft = node.raft
            if raft is not None and (
                len(raft.voters) < 3 or (raft.is_leader and raft.voters_offset >= raft.high_watermark)
            ):
                return False
        return True

    def _owner(self, source: int, named: int) -> int | None:
        """The node listening where `source` believes `named` is."""
        raft = self.nodes[source].raft
        address = raft.endpoint(named) if raft is not None else None
        return next((i for i, e in self.endpoints.items() if e == address), None)

    def link_up(self, a: int, b: int) -> bool:
        return frozenset((a, b)) not in self.cut

    # ---- effects ----

    def _apply(self, node_id: int, effects: list) -> None:
        node = self.nodes[node_id]
        for effect in effects:
            match effect:
                case PersistQuorumState():
                    node.disk.epoch, node.disk.voted_for, node.disk.leader_id = (
                        effect.epoch,
                        effect.voted_for,
                        effect.leader_id,
                    )
                case AppendToLog():
                    if effect.entries[0].offset != node.disk.end_offset:
                        raise InvariantViolation(
                            f"node {node_id} appends at {effect.entries[0].offset}, disk ends at {node.disk.end_offset}"
                        )
                    for entry in effect.entries:
                        self._check_append(node_id, node.disk, entry)
                        node.disk.entries.append(entry)
                case TruncateLog():
                    start = node.disk.snapshot[0].end_offset if node.disk.snapshot else 0
                    del node.disk.entries[effect.end_offset - start :]
                case InstallSnapshot():
                    node.disk.snapshot = (effect.snapshot_id, effect.data)
                    node.disk.snapshot_voters = effect.voters
                    node.disk.snapshot_endpoints = effect.endpoints
                    node.disk.entries = []
                    node.committed = []
                    node.commit_offset = effect.snapshot_id.end_offset
                case SaveSnapshot():
                    start = node.disk.snapshot[0].end_offset if node.disk.snapshot else 0
                    node.disk.entries = node.disk.entries[effect.snapshot_id.end_offset - start :]
                    node.disk.snapshot = (effect.snapshot_id, effect.data)
                    node.disk.snapshot_voters = effect.voters
                    node.disk.snapshot_endpoints = effect.endpoints
                case CommitAdvanced():
                    self._on_commit(node, effect)
                case LeaderChanged():
                    if effect.leader_id == node_id:
                        self._on_new_leader(node_id, effect.epoch)
                case Send():
                    self._send(node_id, effect.destination, effect.request)
                case _:
                    raise AssertionError(f"unknown effect {effect!r}")

    def _check_append(self, node_id: int, disk: Disk, entry: LogEntry) -> None:
        raft = self.nodes[node_id].raft
        if raft is not None and raft.is_leader and voters_of(entry) is not None:
            pending = [e.offset for e in raft.entries if e.offset >= raft.high_watermark and voters_of(e) is not None]
            if any(offset < entry.offset for offset in pending):
                raise InvariantViolation(
                    f"leader {node_id} appends a voter set change at {entry.offset} while {pending} is not committed"
                )
        if node_id not in self.controller_ids and self.committed_history.get(entry.offset) != entry:
            raise InvariantViolation(f"observer {node_id} received uncommitted entry {entry}")
        identity = (entry.data, entry.control, disk.last_epoch)
        known = self.appended.setdefault((entry.offset, entry.epoch), identity)
        if known != identity:
            raise InvariantViolation(
                f"node {node_id} appends offset {entry.offset} epoch {entry.epoch} as (data, control, previous "
                f"epoch) {identity}, another log has {known}"
            )

    def _on_commit(self, node: SimNode, effect: CommitAdvanced) -> None:
        if effect.high_watermark < node.commit_offset:
            raise InvariantViolation(
                f"node {node.node_id} commit went back {node.commit_offset} -> {effect.high_watermark}"
            )
        for entry in effect.entries:
            if entry.offset != node.commit_offset:
                raise InvariantViolation(f"node {node.node_id} committed {entry.offset}, expected {node.commit_offset}")
            known = self.committed_history.setdefault(entry.offset, entry)
            if known != entry:
                raise InvariantViolation(f"offset {entry.offset} committed as {known} and as {entry}")
            node.committed.append(entry)
            node.commit_offset += 1
        node.commit_offset = max(node.commit_offset, effect.high_watermark)

    def _on_new_leader(self, node_id: int, epoch: int) -> None:
        previous = self.leaders_by_epoch.setdefault(epoch, node_id)
        if previous != node_id:
            raise InvariantViolation(f"two leaders in epoch {epoch}: {previous} and {node_id}")
        raft = self.nodes[node_id].raft
        assert raft is not None
        for offset, entry in self.committed_history.items():  # leader completeness
            if offset < raft.log_start_offset:
                continue
            if offset >= raft.log_end_offset or raft.entry(offset) != entry:
                raise InvariantViolation(f"leader {node_id} of epoch {epoch} lacks committed offset {offset}")

    # ---- network ----

    def _send(self, source: int, named: int, request: Any) -> None:
        """`named`: the destination as the sender names it (a negative id: a bootstrap server)."""
        destination = self._owner(source, named)
        if destination is None or not self.link_up(source, destination) or self.rng.random() < self.drop_rate:
            self._schedule(self.rng.randint(20, 60), "failure", (source, named, request))
            return
        copies = 2 if self.rng.random() < self.duplicate_rate else 1
        for _ in range(copies):
            self._schedule(self.rng.randint(1, 8), "request", (source, named, destination, request))

    def _deliver_request(self, source: int, named: int, destination: int, request: Any) -> None:
        target = self.nodes[destination].raft
        if target is None and destination in self.silent:
            return
        if target is None:
            self._schedule(self.rng.randint(20, 60), "failure", (source, named, request))
            return
        response, effects = target.handle_request(source, request, self.now)
        self._apply(destination, effects)
        delay = self.rng.randint(1, 8)
        if isinstance(response, FetchResponse) and not response.entries and response.error_code == 0:
            delay += LONG_POLL_MS
        if not self.link_up(source, destination) or self.rng.random() < self.drop_rate:
            self._schedule(delay + 30, "failure", (source, named, request))
            return
        self._schedule(delay, "response", (destination, named, source, response, request))

    # ---- driving ----

    def propose(self, count: int = 1) -> bool:
        leaders = [n for n in self.nodes.values() if n.raft is not None and n.raft.is_leader]
        if not leaders:
            return False
        leader = self.rng.choice(leaders)
        data = [f"v{self.proposed + i}".encode() for i in range(count)]
        result, effects = leader.raft.propose(data, self.now)
        self._apply(leader.node_id, effects)
        self.proposed += count
        return result.base_offset is not None

    def reconfigure(self) -> None:
        """Ask the leader for one voter set change: drop a voter whose disk was lost, else add a controller that
        is not a voter, else remove one (never below two voters, nor a healthy one while a stale one is left)."""
        leaders = [n for n in self.nodes.values() if n.raft is not None and n.raft.is_leader]
        if not leaders:
            return
        leader = leaders[0].raft
        assert leader is not None
        voters = leader.voter_directories
        stale = [v for v in sorted(voters) if self.directories[v] != voters[v]]
        outsiders = [c for c in self.controller_ids if c not in voters]
        if stale:
            result, effects = leader.remove_voter(stale[0], voters[stale[0]], self.now)
        elif outsiders and (len(voters) < 3 or self.rng.random() < 0.5):
            added = self.rng.choice(outsiders)
            result, effects = leader.add_voter(added, self.directories[added], self.now, self.endpoints[added])
        elif len(voters) >= 3 and (not self.endpoint_changes or self.endpoints_settled()):
            # With endpoint changes, no voter is removed while a moved voter's address is not known everywhere:
            # the smaller voter set might then need that voter to reach a majority.
            removed = self.rng.choice(sorted(voters))
            result, effects = leader.remove_voter(removed, voters[removed], self.now)
        else:
            return
        self._apply(leader.node_id, effects)
        name = result.error_code.name
        self.voter_changes[name] = self.voter_changes.get(name, 0) + 1

    def upgrade(self) -> None:
        """Ask the leader to upgrade kraft.version to 1 (a static quorum becomes dynamic)."""
        leaders = [n.raft for n in self.nodes.values() if n.raft is not None and n.raft.is_leader]
        if not leaders:
            return
        result, effects = leaders[0].upgrade_kraft_version(self.now)
        self._apply(leaders[0].node_id, effects)
        name = f"upgrade {result.error_code.name}"
        self.voter_changes[name] = self.voter_changes.get(name, 0) + 1

    def wipe_allowed(self) -> bool:
        """A disk may be lost while every live node's voter set has three healthy voters and no change is pending:
        the stale voter can then be removed by the two others."""
        live = [n.raft for n in self.nodes.values() if n.raft is not None]
        for raft in live:
            voters = raft.voter_directories
            if len(voters) < 3 or any(self.directories[v] != d for v, d in voters.items()):
                return False
            if raft.is_leader and raft.voters_offset >= raft.high_watermark:
                return False
        return True

    def resign(self) -> bool:
        """A graceful shutdown of the current leader: it sends EndQuorumEpoch and stops leading."""
        leaders = [n for n in self.nodes.values() if n.raft is not None and n.raft.is_leader]
        if not leaders:
            return False
        leader = self.rng.choice(leaders)
        self._apply(leader.node_id, leader.raft.resign(self.now))
        return True

    def step(self) -> None:
        when, _seq, kind, payload = heapq.heappop(self.queue)
        self.now = max(self.now, when)
        self.events += 1
        if kind == "tick":
            node = self.nodes[payload]
            if node.raft is not None:
                self._apply(payload, node.raft.tick(self.now))
            self._schedule(TICK_MS, "tick", payload)
        elif kind == "request":
            self._deliver_request(*payload)
        elif kind == "response":
            source, named, destination, response, request = payload
            node = self.nodes[destination]
            if node.raft is not None and source not in self.silent:
                self._apply(destination, node.raft.handle_response(named, response, self.now, request))
        elif kind == "failure":
            source, destination, request = payload
            node = self.nodes[source]
            if node.raft is not None:
                self._apply(source, node.raft.handle_failure(destination, request, self.now))
        elif kind == "call":
            payload()

    def run_until_true(self, condition: Any, deadline_ms: int) -> bool:
        """Step until `condition()` holds (True) or the next event lies past `deadline_ms` (False)."""
        while not condition():
            if not self.queue or self.queue[0][0] > deadline_ms:
                self.now = max(self.now, deadline_ms)
                return False
            self.step()
        return True

    def run_until(self, time_ms: int) -> None:
        while self.queue and self.queue[0][0] <= time_ms:
            self.step()
        self.now = max(self.now, time_ms)

    def check_log_matching(self) -> None:
        """Same offset and epoch in two logs means the same entries up to there."""
        alive = [n.raft for n in self.nodes.values() if n.raft is not None]
        for a, b in itertools.combinations(alive, 2):
            start = max(a.log_start_offset, b.log_start_offset)
            end = min(a.log_end_offset, b.log_end_offset)
            match = None
            for offset in range(end - 1, start - 1, -1):
                if a.entry(offset).epoch == b.entry(offset).epoch:
                    match = offset
                    break
            if match is None:
                continue
            for offset in range(start, match + 1):
                if a.entry(offset) != b.entry(offset):
                    raise InvariantViolation(
                        f"logs of {a.node_id} and {b.node_id} differ at {offset} below a matching entry at {match}"
                    )

    def snapshot(self, node_id: int) -> None:
        """The node's state machine snapshots everything it has committed (its data: the committed values)."""
        node = self.nodes[node_id]
        raft = node.raft
        if raft is None or raft.high_watermark <= raft.log_start_offset:
            return
        data = b",".join(e.data for e in node.committed)
        self._apply(node_id, raft.take_snapshot(raft.high_watermark, data))
