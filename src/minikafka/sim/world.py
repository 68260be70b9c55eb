"""One seeded simulated run: 3 controllers and 3 brokers (the shipped processes) on the virtual-time loop, the
in-memory network and disks; an acks=all producer and a fault plan from `chaos`'s schedule language, or a scripted
story (`stories.py`); the invariants checked after every step.

A seed decides everything: the plan (drawn as `chaos` draws it), the network's delays and losses, the disks'
fsync latencies and the nodes' own randomness (election timeouts), so a seed replays the same run, with the same
trace hash.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import contextvars
import dataclasses
import functools
import gc
import hashlib
import math
import random
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from minikafka.broker.log_manager import TopicPartition
from minikafka.client.consumer import READ_COMMITTED
from minikafka.client.producer import RecordMetadata
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.grpc_support import PeerChannels
from minikafka.common.node_environment import SimulatedNode, enter_simulated_node, simulated_node
from minikafka.common.record_batch import CorruptRecordError
from minikafka.deploy.chaos_schedule import (
    CONTROLLER_FLAPS,
    GUARD_FAULTS,
    REASSIGN,
    SIMULATE_TIMING,
    SIMULATOR_FAULTS,
    ChaosPlanConfig,
    FaultStep,
    PlanTiming,
    overlapping_groups,
    plan_faults,
    reordered,
)
from minikafka.deploy.compacted_workload import CLEANER_SETTINGS, COMPACTED_TOPIC_CONFIGS
from minikafka.deploy.faults import CONSUMER_PROTOCOL_SETTINGS, _batch_to_corrupt
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.pb import controller_pb2, controller_pb2_grpc
from minikafka.sim.client_invariants import ClientInvariants
from minikafka.sim.clients import (
    GROUP,
    KAFKA_PORT,
    ClientMix,
    MemberKills,
    PlainConsumer,
    group_member,
    produce,
    seeded_mix,
)
from minikafka.sim.cluster import (
    BROKER_IDS,
    CLIENT_ID,
    CONTROLLER_IDS,
    SimProcess,
    broker_address,
    controller_address,
)
from minikafka.sim.controller_quorum import QuorumOperator, format_dynamic_quorum, wipe_and_format
from minikafka.sim.disk import SimDisk, SlowSyncs
from minikafka.sim.event_invariants import EventInvariants
from minikafka.sim.exactly_once import EOS_TOPIC, committed_offsets, exactly_once_worker, output_reader
from minikafka.sim.exactly_once_invariants import ExactlyOnceInvariants
from minikafka.sim.guards import guards_off, guards_on
from minikafka.sim.invariants import (
    Acknowledged,
    BatchHeader,
    Invariants,
    PartitionReplica,
    RaftNode,
    Violation,
    batches_between,
    compacted_log_matching,
    header_spans,
    log_matching,
    records_between,
)
from minikafka.sim.network import NetworkFaults, SimNetwork
from minikafka.sim.partition_reassignment import reassign_partition
from minikafka.sim.planted_bugs import planted
from minikafka.sim.tombstone_reads import TombstoneReads
from minikafka.sim.tombstone_retention import LogEnds, delete_retention_ms, explain_comeback
from minikafka.sim.transaction_invariants import LeaderLso, TransactionInvariants
from minikafka.sim.transactions import TXN_TOPIC, ReadCommittedConsumer, transactional_producer
from minikafka.sim.virtual_loop import VirtualTimeLoop

TOPIC = "sim"
PARTITIONS = 3
# The fault kinds of `chaos` the simulation runs: all of them.
SIMULATED_FAULTS = (
    "kill",
    "reboot",
    "lose-unflushed",
    "wipe-disk",
    "pause",
    "controller-kill",
    "controller-wipe",
    "controller-flap",
    "partition",
    "isolate-leader",
    "isolate-controller",
    "broker-controller",
    "one-way",
    "disk-full",
    "disk-error",
    "corrupt",
    *GUARD_FAULTS,
    *SIMULATOR_FAULTS,
)
# What a run draws from unless told: `corrupt` only when asked for, since a flipped bit in a follower's old batch is
# found only if that batch is read again (its replica leads, or a follower fetches it), which a run rarely does;
# `controller-wipe` too, since it needs a dynamic quorum, which `cluster up` also makes only when asked; the guards'
# faults (a clean stop, held AlterPartitions) too, so the default seeds keep their plans.
DEFAULT_FAULTS = tuple(
    kind for kind in SIMULATED_FAULTS if kind not in ("corrupt", "controller-wipe", *GUARD_FAULTS, *SIMULATOR_FAULTS)
)
FSYNC_LATENCY_MS = (0.5, 8.0)  # work handed to a thread pool (fsyncs) takes this long
SLOW_FSYNC_S = (1.0, 5.0)  # and this much longer on a slow disk
# Between a controller-flap's cuts: chaos heals and cuts again at once, so the gap is about one fault tool's call.
FLAP_HEALED_S = 0.2
STEP_S = 0.25  # invariants are checked this often (simulated)
# The invariants a loss of acknowledged writes breaks: explained when faults overlapped before it.
# Faults that take no replica away: two at once with one of these still leaves one replica away at most.
_CONTROLLER_SIDE = (
    "controller-kill",
    "controller-wipe",
    "controller-flap",
    "isolate-controller",
    "hold-alter-partition",
    "slow-disk",
    REASSIGN,
)
LOSSES = (
    "NoCommittedRecordLost",
    "LeaderCandidateCompleteness",
    "LogMatching",
    "InconsistentOffsets",
    "GroupConsumedEveryRecord",
)
LOG_MATCHING_STEPS = 8  # the replicas' logs are compared this many steps apart (each time from where they matched)
FULL_COLLECTION_STEPS = 40
START_TIMEOUT_S = 60.0
CLOSE_TIMEOUT_S = 10.0  # simulated: how long a finished run's cancelled tasks and async generators get to end
RECOVERY_TIMEOUT_S = 30.0  # full ISRs awaited after each fault, as `chaos` does
QUIET_S = 5.0  # after the last fault healed, before the final read
READ_ALL_TIMEOUT_S = 60.0  # then, how long the consumers get to read every acknowledged record
PRODUCE_INTERVAL_S = 0.02
TRACE_TAIL = 60  # events printed before a violation
SCRATCH = "$SCRATCH"  # the run's scratch directory, as the trace writes it
# Events that tell what happened to leadership, membership and logs: hashed, and quoted on a violation.
_DECISIVE = (
    "leader",
    "isr",
    "fenc",
    "elect",
    "truncat",
    "unclean",
    "registered",
    "sim_",
    "consumer_group_member",
    "controller_activated",
    "group_generation",
    "group_coordinator",
)


@dataclass(frozen=True)
class TopicSpec:
    """The one topic of a run: its partitions, each one's replicas (empty: the controller places 3), its configs."""

    partitions: int = PARTITIONS
    assignment: tuple[tuple[int, ...], ...] = ()
    configs: Mapping[str, str] = field(default_factory=lambda: {"min.insync.replicas": "2"})
    replicas: int = len(BROKER_IDS)  # each partition's, without an assignment

    @property
    def replication_factor(self) -> int:
        return len(self.assignment[0]) if self.assignment else self.replicas

    @property
    def described(self) -> str:
        return f"RF {self.replication_factor} and min.insync.replicas {self.configs.get('min.insync.replicas', '1')}"


@dataclass(frozen=True)
class SimulationSettings:
    seed: int
    duration_s: float = 60.0
    faults: tuple[str, ...] = DEFAULT_FAULTS
    overrides: Mapping[str, str] = field(default_factory=dict)
    planted_bug: str | None = None
    timing: PlanTiming = SIMULATE_TIMING  # the fault plan's gaps and longest downtime
    power_loss: bool = False  # kill and controller-kill cut the node's files back to what was fsynced
    torn_writes: bool = False  # a power loss keeps a seeded prefix of each file's unflushed bytes
    overlap: float = 0.0  # the plan's probability that a fault strikes while the one before is active
    max_at_once: int = 2  # with `overlap`: how many faults may be active at once
    network: NetworkFaults = NetworkFaults()
    topic: TopicSpec = TopicSpec()
    broker_overrides: Mapping[str, str] = field(default_factory=dict)  # after `overrides`, brokers only
    watched_events: tuple[str, ...] = ()  # events kept whole for a story to look at
    keep_going: bool = False  # a story runs on past a violation (the first of each invariant kept) to its end
    clients: ClientMix = ClientMix()  # the producers, consumers and group members of a fault plan's run
    dynamic_quorum: bool = False  # the controllers formatted as a dynamic quorum (KIP-853); so too with controller-wipe
    scratch: str | None = None  # where each run's scratch directory is made (None: /dev/shm when present)


@dataclass
class SimulationResult:
    seed: int
    violation: Violation | None
    at_s: float  # simulated time of the violation, or of the end
    step: str  # the fault step under way when it was found
    trace_hash: str
    trace: list[str]
    acknowledged: int
    faults: int
    simulated_s: float
    wall_s: float
    cpu_s: float  # this process's CPU time for the seed (wall time depends on what else the machine runs)
    observed: dict[str, Any] = field(default_factory=dict)  # what a story saw on its way
    violations: list[Violation] = field(default_factory=list)  # with `keep_going`: the first of each invariant
    # Why a loss is beyond Kafka's promise (None: it is not, or nothing was lost): a fault struck before the cluster
    # had recovered from the one before, so more than one replica was away at once.
    explained: str | None = None


class Trace:
    """The decisive events of a run, hashed in order; the newest kept for the report."""

    def __init__(self, watched: tuple[str, ...] = ()) -> None:
        self.digest = hashlib.sha256()
        self.tail: deque[str] = deque(maxlen=TRACE_TAIL)
        self.events = 0
        self.watched: dict[str, list[dict[str, Any]]] = {name: [] for name in watched}
        self.hooks: dict[str, Callable[[Mapping[str, Any]], None]] = {}  # a story's step taken the moment it's logged
        self.observers: list[Callable[[Mapping[str, Any]], None]] = []  # every event, as it is logged
        # The run's scratch directory, named anew each run (mkdtemp): written as SCRATCH, so paths in events (a
        # failed log dir) hash the same in a replay.
        self.scratch: str | None = None

    def add(self, line: str) -> None:
        if self.scratch is not None:
            line = line.replace(self.scratch, SCRATCH)
        self.digest.update(line.encode() + b"\n")
        self.tail.append(line)
        self.events += 1

    def unhandled(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """An error no task retrieved (a crashed node's leftovers): kept in the trace, not printed. The loop's own
        clock: this also runs from a finalizer after the run, outside any loop, where asking for one would raise."""
        self.add(f"{loop.time():10.3f} sim_unhandled_error {context.get('exception')!r}")

    def processor(self, _logger: Any, _name: str, event: MutableMapping[str, Any]) -> Any:
        name = str(event.get("event", ""))
        if name in self.watched:
            self.watched[name].append(dict(event))
        if name in self.hooks:
            self.hooks.pop(name)(event)
        for observer in self.observers:
            observer(event)
        if any(word in name for word in _DECISIVE):
            loop = asyncio.get_running_loop()
            fields = " ".join(f"{k}={event[k]}" for k in sorted(event) if k != "event")
            self.add(f"{loop.time():10.3f} {name} {fields}")
        raise structlog.DropEvent


class Violated(Exception):
    def __init__(self, violation: Violation) -> None:
        super().__init__(violation.detail)
        self.violation = violation


class World:
    def __init__(self, settings: SimulationSettings, root: Path, trace: Trace) -> None:
        self.settings = settings
        self.trace = trace
        self.network = SimNetwork(random.Random(settings.seed * 7919 + 1), settings.network)
        overrides = dict(settings.overrides)
        # KIP-848 members' sessions as `chaos` sets them, so both drivers wait out a crashed member alike.
        groups = CONSUMER_PROTOCOL_SETTINGS if settings.clients.group_protocol == "consumer" else {}
        # A compacted topic's cleaners poll as chaos's do, so they work within a short run.
        cleaners = CLEANER_SETTINGS if settings.clients.compacted_keys else {}
        brokers = {**groups, **cleaners, **overrides, **settings.broker_overrides}
        self.processes = {
            node_id: SimProcess(node_id, root / str(node_id), self.network, overrides) for node_id in CONTROLLER_IDS
        } | {
            node_id: SimProcess(node_id, root / str(node_id), self.network, {**brokers, **self._kafka(node_id)})
            for node_id in BROKER_IDS
        }
        if settings.torn_writes:  # each node's own source, so one node's draws do not shift another's
            for node_id, process in self.processes.items():
                process.torn_writes = random.Random(settings.seed * 7919 + 300 + node_id)
        self.topic = settings.topic
        if settings.clients.compacted_keys:
            self.topic = dataclasses.replace(self.topic, configs={**self.topic.configs, **COMPACTED_TOPIC_CONFIGS})
        self.invariants = Invariants(compacted=bool(settings.clients.compacted_keys))
        self.log_ends = LogEnds()  # compacted: to tell a deleted key's comeback within Kafka's bound
        self.events = EventInvariants(frozenset(CONTROLLER_IDS))
        held, tombstones = None, None
        if settings.clients.compacted_keys:
            retention_ms = delete_retention_ms({**settings.overrides, **settings.broker_overrides})
            held, tombstones = self._tombstone_held, TombstoneReads(retention_ms / 1000)
        self.clients = ClientInvariants(self._highest_high_watermark, held, tombstones)
        self.transactions = TransactionInvariants()
        self.exactly_once = ExactlyOnceInvariants()
        self.eos_tasks: list[asyncio.Task[Any]] = []  # the pipeline's workers and its output's reader
        trace.observers.append(self._observe_client_event)
        self.matched: dict[tuple[int, int, int], int] = {}  # LogMatching: how far each pair of replicas matched
        trace.observers.append(self._observe)
        self.step = "start"
        self.client_context = contextvars.Context()
        self.client_context.run(enter_simulated_node, SimulatedNode(CLIENT_ID, self.network, SimDisk()))
        self.acked = 0
        self.faults_done = 0
        self.steps = 0
        self.observed: dict[str, Any] = {}
        if settings.clients.compacted_keys:
            self.observed["compaction"] = {"cleanings": 0, "records_removed": 0, "tombstones_removed": 0}
        self.violations: list[Violation] = []
        self.corrupted: dict[int, int] = {}  # partition -> the broker whose replica of it was corrupted
        self.overlapping: list[str] = []  # how faults overlapped: one struck before the cluster recovered from another
        self.member_kills: MemberKills | None = None
        self.client_tasks: list[asyncio.Task[Any]] = []
        self.producing: list[asyncio.Task[Any]] = []  # the producers, transactional ones too
        self.killing: asyncio.Task[None] | None = None  # the group members' kills, while the faults run
        # As `chaos`: a run that wipes controllers formats a dynamic quorum, so a wiped voter can be replaced.
        self.dynamic_quorum = settings.dynamic_quorum or "controller-wipe" in settings.faults
        self.quorum = QuorumOperator(RECOVERY_TIMEOUT_S)

    def _kafka(self, broker: int) -> dict[str, str]:
        """With group members, a broker also has a Kafka listener (its group coordinator speaks Kafka's protocol),
        and __consumer_offsets a few partitions rather than Kafka's 50."""
        if not self.settings.clients.kafka_listeners:
            return {}
        grpc_listener = broker_address(broker)
        kafka = f"{grpc_listener.rpartition(':')[0]}:{KAFKA_PORT}"
        listeners = {"listeners": f"GRPC://{grpc_listener},PLAINTEXT://{kafka}", "offsets.topic.num.partitions": "3"}
        if self.settings.clients.transaction_coordinators:
            listeners["transaction.state.log.num.partitions"] = "3"
        return listeners

    def kafka_bootstrap(self) -> list[str]:
        return [f"{broker_address(b).rpartition(':')[0]}:{KAFKA_PORT}" for b in BROKER_IDS]

    def _highest_high_watermark(self, partition: int) -> int:
        """The highest high watermark a leader of the partition had reached, up to now (not only the last step)."""
        now = [max(r.high_watermark, r.replica_high_watermark) for r in self.replicas() if r.partition == partition]
        return max([self.invariants.high_watermarks.get(partition, 0), *now])

    def _tombstone_held(self, partition: int, offset: int) -> bool:
        """Whether the partition's newest leader holds a record at `offset` (True while none leads: unknown)."""
        leader = self._leading()[partition]
        return leader is None or offset in _read_values(leader.log, offset, offset + 1)

    def _observe_client_event(self, event: Mapping[str, Any]) -> None:
        name = event.get("event")
        if name == "offset_committed":
            self.clients.observe_event(event, TOPIC, asyncio.get_running_loop().time())
        elif name == "log_cleaned" and str(event.get("partition")).rpartition("-")[0] == TOPIC:
            cleaned = self.observed["compaction"]
            cleaned["cleanings"] += 1
            cleaned["records_removed"] += int(event["records_before"]) - int(event["records_after"])
            cleaned["tombstones_removed"] += int(event["tombstones_removed"])

    # ---- what the nodes hold ----

    def _hosted(self, topic: str) -> Iterator[tuple[int, int, Any]]:
        """(broker id, partition, replica) of every replica of `topic` a running broker hosts."""
        for node_id in BROKER_IDS:
            broker = self.processes[node_id].parts.get("broker")
            if broker is None:
                continue
            for partition in range(self.topic.partitions):
                replica = broker.manager.replicas.get(TopicPartition(topic, partition))
                if replica is not None:
                    yield node_id, partition, replica

    def _serving(self, node_id: int) -> bool:
        """Whether a broker's leaderships are exercised: a starting broker restarted within its old session leads from
        its stale image, but serves no read or append of them, and its listeners are closed until it is unfenced."""
        broker = self.processes[node_id].parts.get("broker")
        return broker is not None and bool(broker.lifecycle.serving)

    def replicas(self) -> list[PartitionReplica]:
        found = []
        for node_id, partition, replica in self._hosted(TOPIC):
            log = replica.log
            found.append(
                PartitionReplica(
                    node_id,
                    partition,
                    replica.leader is not None and self._serving(node_id),
                    replica.leader_epoch,
                    replica.leader.high_watermark if replica.leader is not None else -1,
                    log.log_end_offset,
                    functools.partial(_read_values, log),
                    log.log_start_offset,
                    log.high_watermark,
                    functools.partial(_read_batches, log),
                    self.processes[node_id].starts,
                    _epoch_start(log, replica.leader_epoch) if replica.leader is not None else -1,
                )
            )
        return found

    def raft_nodes(self) -> list[RaftNode]:
        found = []
        for node_id in CONTROLLER_IDS:
            driver = self.processes[node_id].parts.get("raft")
            if driver is None:
                continue
            core = driver.core
            found.append(
                RaftNode(
                    node_id,
                    core.epoch,
                    core.is_leader,
                    core.high_watermark,
                    core.log_start_offset,
                    core.log_end_offset,
                    functools.partial(_entry_epoch, core),
                )
            )
        return found

    def check(self) -> None:
        replicas = self.replicas()
        if self.invariants.compacted:
            self.invariants.now = asyncio.get_running_loop().time()
            self.log_ends.note(self.invariants.now, replicas)
        self.violated(self.invariants.check(replicas, self.raft_nodes()))
        self.events.ownership.judge(asyncio.get_running_loop().time())
        while self.events.violations:
            self.violated(self.events.violations.pop(0))
        while self.clients.violations:
            self.violated(self.clients.violations.pop(0))
        if self.settings.clients.transactional:
            self.transactions.check_torn()
            self.transactions.check_stable(self.txn_leaders(), asyncio.get_running_loop().time())
            while self.transactions.violations:
                self.violated(self.transactions.violations.pop(0))
        while self.exactly_once.violations:
            self.violated(self.exactly_once.violations.pop(0))
        self.violated(self._client_failed())
        if self.steps % LOG_MATCHING_STEPS == 0:
            self.violated(self.log_matching(replicas, self.matched))

    def log_matching(
        self, replicas: list[PartitionReplica], matched: dict[tuple[int, int, int], int]
    ) -> Violation | None:
        """LogMatching by batches, or by the values both replicas still hold on a compacted topic (each replica
        cleans its own log, so their batches differ)."""
        check = compacted_log_matching if self.invariants.compacted else log_matching
        return check(replicas, matched)

    def txn_leaders(self) -> list[LeaderLso]:
        """The last stable offset of every replica of the transactional topic that leads (a read_committed fetch
        reads below it)."""
        return [
            LeaderLso(node_id, partition, replica.log.last_stable_offset)
            for node_id, partition, replica in self._hosted(TXN_TOPIC)
            if replica.leader is not None
        ]

    def _client_failed(self) -> Violation | None:
        """A client's task ended with an error: the run would otherwise go on without it and look held."""
        members = self.member_kills.tasks if self.member_kills is not None else []
        for task in [*self.client_tasks, *members]:
            if task.done() and not task.cancelled() and task.exception() is not None:
                return Violation("ClientFailed", f"a client of the world failed: {task.exception()!r}")
        return None

    def _observe(self, event: Mapping[str, Any]) -> None:
        node = simulated_node()
        node_id = None if node is None or node.node_id not in self.processes else node.node_id
        starts = 0 if node_id is None else self.processes[node_id].starts
        self.events.observe(node_id, starts, event, asyncio.get_running_loop().time())

    def violated(self, violation: Violation | None) -> None:
        if violation is None:
            return
        if not self.settings.keep_going:
            raise Violated(violation)
        if all(known.invariant != violation.invariant for known in self.violations):
            self.violations.append(violation)
            self.trace.add(
                f"{asyncio.get_running_loop().time():10.3f} violation {violation.invariant}: {violation.detail}"
            )

    async def run_for(self, seconds: float) -> None:
        """Let the cluster run, checking the invariants every step."""
        loop = asyncio.get_running_loop()
        end = loop.time() + seconds
        while (left := end - loop.time()) > 0:
            await asyncio.sleep(min(STEP_S, left))
            # Collected here, not whenever allocations say: finalizers (an abandoned stream's async generator) then
            # schedule their work at the same point of every replay. The young generation each step, all of it
            # now and then (a full collection costs a hundred times more).
            self.steps += 1
            gc.collect(2 if self.steps % FULL_COLLECTION_STEPS == 0 else 0)
            self.check()

    async def run_until(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout_s
        while not condition():
            if loop.time() >= end:
                return False
            await self.run_for(STEP_S)
        return True

    def full_isrs(self) -> bool:
        leaders = [r for r in self._leading() if r is not None]
        size = self.topic.replication_factor
        return len(leaders) == self.topic.partitions and all(len(r.leader.isr) == size for r in leaders)

    def recovered(self) -> bool:
        """Full ISRs in the committed metadata as every leader sees them, and every broker registered, unfenced, as
        the incarnation running now. A broker restarted within its old session's timeout is refused registration
        (DUPLICATE_BROKER_REGISTRATION) and its old epoch stays in the ISRs: a leader's view alone calls that full."""
        if not self.full_isrs():
            return False
        image = self.committed_image()
        for node_id in BROKER_IDS:
            broker = self.processes[node_id].parts.get("broker")
            registered = image.broker(node_id)
            if broker is None or registered is None or registered.fenced:
                return False
            if registered.incarnation_id != broker.lifecycle.incarnation_id:
                return False
        found = image.topics_by_name.get(TOPIC)
        size = self.topic.replication_factor
        return found is not None and all(len(p.isr) == size for p in found.partitions.values())

    def committed_image(self) -> MetadataImage:
        """The committed metadata of the controller that replayed the most."""
        controllers = [self.processes[c].parts.get("controller") for c in CONTROLLER_IDS]
        running = [c for c in controllers if c is not None]
        if not running:
            return MetadataImage()
        return max(running, key=lambda c: c.replayed_offset).state.committed

    def _leading(self, topic: str = TOPIC) -> list[Any]:
        newest: dict[int, Any] = {}
        for node_id in BROKER_IDS:
            broker = self.processes[node_id].parts.get("broker")
            if broker is None:
                continue
            for partition in range(self.topic.partitions):
                replica = broker.manager.replicas.get(TopicPartition(topic, partition))
                if replica is not None and replica.leader is not None:
                    known = newest.get(partition)
                    if known is None or replica.leader_epoch > known.leader_epoch:
                        newest[partition] = replica
        return [newest.get(p) for p in range(self.topic.partitions)]

    def note(self, text: str) -> None:
        self.trace.add(f"{asyncio.get_running_loop().time():10.3f} sim_step {text}")

    # ---- the run ----

    async def start(self) -> None:
        if self.dynamic_quorum:
            format_dynamic_quorum(self.processes)
        for process in self.processes.values():
            process.start()

        def serving() -> bool:
            brokers = [self.processes[b].parts.get("broker") for b in BROKER_IDS]
            return all(b is not None and b.lifecycle.serving for b in brokers)

        if not await self.run_until(serving, START_TIMEOUT_S):
            raise Violated(Violation("ClusterStarts", f"the brokers were not all serving after {START_TIMEOUT_S}s"))
        created = await self._in_client(self._create_topic(TOPIC))
        if not created or not await self.run_until(self.full_isrs, START_TIMEOUT_S):
            raise Violated(Violation("ClusterStarts", f"topic {TOPIC} was not created with full ISRs"))
        self.note(f"topic {TOPIC} created with {self.topic.partitions} partitions")
        if self.settings.clients.transactional:
            if not await self._in_client(self._create_topic(TXN_TOPIC)):
                raise Violated(Violation("ClusterStarts", f"topic {TXN_TOPIC} was not created"))
            self.note(f"topic {TXN_TOPIC} created with {self.topic.partitions} partitions")
        if self.settings.clients.exactly_once:
            if not await self._in_client(self._create_topic(EOS_TOPIC)):
                raise Violated(Violation("ClusterStarts", f"topic {EOS_TOPIC} was not created"))
            self.note(f"topic {EOS_TOPIC} created with {self.topic.partitions} partitions")

    def _in_client(self, coroutine: Any) -> asyncio.Task[Any]:
        return asyncio.get_running_loop().create_task(coroutine, context=self.client_context)

    async def _create_topic(self, name: str, spec: TopicSpec | None = None) -> bool:
        """Create `name` as `spec` says (the run's topic spec by default); whether the controller did."""
        channels = PeerChannels()
        spec = spec or self.topic
        Creatable = controller_pb2.CreateTopicsRequest.CreatableTopic
        topic = Creatable(name=name, configs=dict(spec.configs))
        if spec.assignment:
            topic.num_partitions, topic.replication_factor = -1, -1
            for index, replicas in enumerate(spec.assignment):
                topic.assignments.add(partition_index=index, broker_ids=replicas)
        else:
            topic.num_partitions, topic.replication_factor = spec.partitions, spec.replication_factor
        request = controller_pb2.CreateTopicsRequest(topics=[topic], timeout_ms=10_000)
        for _attempt in range(50):
            for node_id in CONTROLLER_IDS:
                stub = controller_pb2_grpc.ControllerStub(channels.get(controller_address(node_id)))
                try:
                    response = await stub.CreateTopics(request, timeout=5)
                except Exception:  # noqa: BLE001 - a controller away or deposed: ask the next
                    continue
                if response.error_code == ErrorCode.NONE and response.topics[0].error_code in (
                    ErrorCode.NONE,
                    ErrorCode.TOPIC_ALREADY_EXISTS,
                ):
                    return True
            await asyncio.sleep(0.5)
        return False

    def start_clients(self, stop: asyncio.Event) -> list[asyncio.Task[Any]]:
        """The settings' producers (until `stop`), plain consumers and group members (until cancelled)."""
        mix, bootstrap = self.settings.clients, [broker_address(b) for b in BROKER_IDS]
        producers = [
            self._in_client(
                produce(
                    bootstrap,
                    TOPIC,
                    self.topic.partitions,
                    index,
                    spec,
                    stop,
                    self.clients,
                    self._acknowledged_at,
                    PRODUCE_INTERVAL_S,
                    mix.compacted_keys,
                )
            )
            for index, spec in enumerate(mix.producers)
        ]
        readers = [
            self._in_client(
                PlainConsumer(name, bootstrap, TOPIC, self.clients, mix.isolation_level, self._reader_start(c)).run()
            )
            for c, name in enumerate(self.readers)
        ]
        transactional = self._start_transactional(bootstrap, stop)
        self.producing = [*producers, *transactional[: mix.transactional]]
        self.client_tasks = [*self.producing, *readers, *transactional[mix.transactional :]]
        self.client_tasks += self._start_group(bootstrap)
        self.eos_tasks = self._start_exactly_once(bootstrap)
        self.client_tasks += self.eos_tasks
        return self.client_tasks

    def _start_exactly_once(self, bootstrap: list[str]) -> list[asyncio.Task[Any]]:
        """The exactly-once pipeline's workers (each's aborts and crashes drawn from its own source) and the
        read_committed reader of its output, until cancelled."""
        workers, partitions = self.settings.clients.exactly_once, list(range(self.topic.partitions))
        if not workers:
            return []
        tasks = [
            self._in_client(
                exactly_once_worker(
                    n,
                    bootstrap,
                    self.kafka_bootstrap(),
                    TOPIC,
                    partitions,
                    self.exactly_once,
                    random.Random(self.settings.seed * 7919 + 200 + n),
                    self.settings.clients.group_protocol,
                )
            )
            for n in range(workers)
        ]
        return [*tasks, self._in_client(output_reader(bootstrap, self.exactly_once))]

    def pipeline_drained(self) -> bool:
        """The exactly-once pipeline has committed every input record below the input leaders' high watermarks, no
        transaction of its output is open, and the output's reader has gone past all of it."""
        inputs = self._leading()
        if any(
            r is None or self.exactly_once.committed.get(p, 0) < r.leader.high_watermark for p, r in enumerate(inputs)
        ):
            return False
        outputs = self._leading(EOS_TOPIC)
        positions = self.exactly_once.positions
        return all(
            r is not None
            and r.log.last_stable_offset == r.leader.high_watermark
            and positions.get(p, 0) >= r.leader.high_watermark
            for p, r in enumerate(outputs)
        )

    async def finish_exactly_once(self) -> None:
        """The pipeline stopped, then its final check against the group's stable committed offsets."""
        for task in self.eos_tasks[:-1]:
            task.cancel()
        await asyncio.wait(self.eos_tasks[:-1])
        partitions = list(range(self.topic.partitions))
        fetching = self._in_client(committed_offsets(self.kafka_bootstrap(), TOPIC, partitions))
        if not await self.run_until(fetching.done, READ_ALL_TIMEOUT_S):
            fetching.cancel()  # a transaction's offsets never stable (a hanging transaction), or no coordinator
            self.violated(Violation("ExactlyOnceOutput", "the group's committed offsets were never read stable"))
            return
        committed = fetching.result()
        ends = {p: r.leader.high_watermark for p, r in enumerate(self._leading()) if r is not None}
        self.exactly_once.check_final(committed, lambda p, o: self.clients.values_at.get((p, o)), ends)
        self.observed["exactly_once"] = {**self.exactly_once.summary(), "committed_offsets": committed}

    def _start_transactional(self, bootstrap: list[str], stop: asyncio.Event) -> list[asyncio.Task[Any]]:
        """The transactional producers (until `stop`), then a read_committed reader of their topic for each
        read_committed plain consumer; each producer's commits, aborts and crashes drawn from its own source."""
        mix, partitions = self.settings.clients, list(range(self.topic.partitions))
        producers = [
            self._in_client(
                transactional_producer(
                    self.kafka_bootstrap(),
                    f"t{n}",
                    partitions,
                    stop,
                    self.transactions,
                    random.Random(self.settings.seed * 7919 + 100 + n),
                )
            )
            for n in range(mix.transactional)
        ]
        readers = [
            self._in_client(ReadCommittedConsumer(name, bootstrap, self.transactions).run())
            for name in self.txn_readers
        ]
        return [*producers, *readers]

    @property
    def txn_readers(self) -> list[str]:
        """The plain consumers that read the transactional topic: the read_committed ones."""
        mix = self.settings.clients
        return self.readers if mix.transactional and mix.isolation_level == READ_COMMITTED else []

    def _start_group(self, bootstrap: list[str]) -> list[asyncio.Task[Any]]:
        """The group's members, killed and restarted at seeded times (not while the faults are healed)."""
        mix = self.settings.clients
        if not mix.group_members:
            return []
        incarnations = [0] * mix.group_members

        def start(member: int) -> asyncio.Task[None]:
            incarnations[member] += 1
            name = f"member-{member}.{incarnations[member]}"
            kafka = self.kafka_bootstrap()
            running = group_member(
                name, bootstrap, kafka, TOPIC, self.clients, lambda: kills.killing, mix.group_protocol
            )
            return self._in_client(running)

        kills = MemberKills(random.Random(self.settings.seed * 7919 + 2), start, mix.group_members)
        self.member_kills = kills
        killing = self._in_client(kills.run()) if mix.member_kills else None
        self.killing = killing
        return [t for t in (killing,) if t is not None] + [self._in_client(self._members_until_cancelled(kills))]

    @staticmethod
    async def _members_until_cancelled(kills: MemberKills) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            kills.stop()

    def _reader_start(self, reader: int) -> float:
        """When a plain consumer starts, in seconds: at once, but on a compacted topic the n-th of N a (n + 1) / (N +
        1) part into the run, so each reads from the start of logs cleaned meanwhile (Kafka's promise to it: each
        key's latest record)."""
        if not self.settings.clients.compacted_keys:
            return 0.0
        return self.settings.duration_s * (reader + 1) / (self.settings.clients.consumers + 1)

    @property
    def readers(self) -> list[str]:
        return [f"consumer-{c}" for c in range(self.settings.clients.consumers)]

    def _acknowledged_at(self, partition: int, offset: int, value: bytes) -> None:
        self.acked += 1
        self.invariants.acknowledge(Acknowledged(partition, offset, value))

    def read_everything(self) -> bool:
        """Every plain consumer and the group have read every acks=all acknowledged record."""
        group = [None] if self.settings.clients.group_members else []
        if any(self.transactions.unread(r) or self.transactions.behind(r) for r in self.txn_readers):
            return False
        if self.settings.clients.exactly_once and not self.pipeline_drained():
            return False
        return not any(self.clients.unread(reader) for reader in [*self.readers, *group])

    def check_reads(self) -> None:
        """The consumers' final reads (after the faults healed): every acks=all record read by every plain
        consumer and by the group."""
        self.clients.check_final(self.readers, GROUP if self.settings.clients.group_members else None)
        mix = self.settings.clients
        if mix.transactional:
            self.transactions.check_final(self.txn_readers)
            self.observed["transactions"] = self.transactions.counts()
        self.observed["clients"] = (
            f"producers {', '.join(p.label for p in mix.producers)}; {mix.consumers} consumer(s); a group of "
            f"{mix.group_members}"
        )
        if mix.group_members and mix.group_protocol == "consumer":
            self.observed["clients"] += f" (group.protocol consumer, {self.events.ownership.spans} holdings checked)"
        if mix.transactional:
            self.observed["clients"] += (
                f"; {mix.transactional} transactional producer(s), {len(self.txn_readers)} read_committed reader(s)"
            )
        if mix.exactly_once:
            self.observed["clients"] += f"; an exactly-once pipeline of {mix.exactly_once}"
        self.observed["consumed"] = self.clients.reads
        self.observed["commits"] = self.clients.commits_seen
        self.observed["lost_acks_one"] = self.clients.lost_acks_one()
        if "compaction" in self.observed:
            skipped = sum(self.clients.skipped_as_cleaned(reader) for reader in self.readers)
            self.observed["compaction"]["skipped_by_consumers"] = skipped
            if mix.group_members:
                self.observed["compaction"]["skipped_by_group"] = self.clients.skipped_as_cleaned(None)
        self.observed["member_kills"] = self.member_kills.kills if self.member_kills is not None else 0
        while self.clients.violations:
            self.violated(self.clients.violations.pop(0))
        while self.transactions.violations:
            self.violated(self.transactions.violations.pop(0))
        while self.exactly_once.violations:
            self.violated(self.exactly_once.violations.pop(0))

    def _acknowledged(self, value: bytes, done: asyncio.Future[RecordMetadata]) -> None:
        if done.cancelled() or done.exception() is not None:
            return  # not acknowledged: it may or may not be in the log
        meta = done.result()
        if meta.offset is None:
            return
        self.acked += 1
        self.invariants.acknowledge(Acknowledged(meta.partition, meta.offset, value))

    async def inject(self, steps: tuple[FaultStep, ...]) -> None:
        """A step, and those that strike while it is active (each at its offset from the first's start), then the
        cluster's recovery awaited; invariants are checked all along by the first step's waits."""
        loop = asyncio.get_running_loop()
        first, *joining = steps
        joined = [loop.create_task(self._join(step, steps[:index])) for index, step in enumerate(steps) if index]
        try:
            await self.strike(first, self.run_for)
            ends = max(step.at_s - first.at_s + step.down_s for step in steps)  # the last healing, from the start
            await self.run_until(lambda: all(task.done() for task in joined), RECOVERY_TIMEOUT_S + ends)
            for task in joined:
                task.result()  # a step's own failure, raised here
        finally:
            for task in joined:
                task.cancel()
        if not await self.run_until(self.recovered, RECOVERY_TIMEOUT_S):
            kinds = " + ".join(step.kind for step in steps)
            self.note(f"not recovered from {kinds} after {RECOVERY_TIMEOUT_S:.0f}s: the next fault overlaps it")
            self.overlapping.append(f"the cluster had not recovered from {self.step} when the next fault struck")

    async def _join(self, step: FaultStep, before: tuple[FaultStep, ...]) -> None:
        """`step` at its offset from the group's first start; from then on, a loss is charged to two brokers away if
        a step before it in the group took a broker away too (the group is recovered from only as a whole)."""
        await asyncio.sleep(step.at_s - before[0].at_s)
        away = [earlier.kind for earlier in before if earlier.kind not in _CONTROLLER_SIDE]
        if away and step.kind not in _CONTROLLER_SIDE:
            self.overlapping.append(f"{step.kind} at {step.at_s:.1f}s struck while {away[-1]} was active")
        await self.strike(step, asyncio.sleep)

    async def strike(self, step: FaultStep, wait: Callable[[float], Awaitable[None]]) -> None:
        """One step, from its strike to its healing; `wait` lets the cluster run meanwhile."""
        kind = step.kind
        target = self._target(step)
        self.step = f"{kind} {target if target is not None else ''}".strip() + f" at {step.at_s:.1f}s"
        self.note(f"{kind} target={target} groups={step.groups} down_s={step.down_s}")
        match kind:
            case "kill" | "controller-kill":
                await self.processes[step.target].crash(power_loss=self.settings.power_loss)
                await wait(step.down_s)
                self.processes[step.target].start()
            case "reboot" | "lose-unflushed":
                await self.processes[step.target].crash(power_loss=kind == "lose-unflushed")
                self.processes[step.target].start()
            case "wipe-disk":
                process = self.processes[step.target]
                await process.crash(power_loss=False)
                shutil.rmtree(process.data_dir, ignore_errors=True)
                process.start()
            case "disk-full" | "disk-error":
                # The storage layer's own seam (what chaos's InjectDiskFault calls): ENOSPC on every write, or EIO
                # on every read and write, until a new process runs on a repaired disk; it may exit first.
                process = self.processes[step.target]
                broker = process.parts.get("broker")
                if broker is not None:
                    broker.manager.logs.failures.inject(kind)
                await wait(step.down_s)
                await process.crash(power_loss=False)
                process.start()
            case "corrupt":
                self._corrupt(step.target)
            case "controller-wipe":
                await self._wipe_controller(step.target)
            case "pause":
                loop = asyncio.get_running_loop()
                assert isinstance(loop, VirtualTimeLoop)
                loop.pause(step.target)
                await wait(step.down_s)
                loop.resume(step.target)
            case "partition" | "broker-controller" | "one-way":
                first, second = step.groups  # type: ignore[misc]
                self.network.partition(first, second, one_way=kind == "one-way")
                await wait(step.down_s)
                self.network.heal()
            case "isolate-leader" | "isolate-controller":
                if target is not None:
                    self.network.partition([target], self._others(target))
                await wait(step.down_s)
                self.network.heal()
            case "stop":
                await self.processes[step.target].stop()
                await wait(step.down_s)
                self.processes[step.target].start()
            case "hold-alter-partition":
                await self._hold_alter_partition(step.target, step.down_s, wait)
            case "slow-disk":
                await self._slow_disk(target, step, wait)
            case "reassign":
                await self._reassign(step)
            case "controller-flap":
                for _ in range(CONTROLLER_FLAPS):
                    self.network.partition([step.target], self._others(step.target))
                    await wait(step.down_s / CONTROLLER_FLAPS)
                    self.network.heal()
                    await wait(FLAP_HEALED_S)
            case _:
                raise ValueError(f"fault kind {kind} is not simulated")
        self.note(f"{kind} healed")
        self.faults_done += 1

    async def _hold_alter_partition(
        self, node_id: int, down_s: float, wait: Callable[[float], Awaitable[None]]
    ) -> None:
        """The broker's AlterPartition requests held for `down_s`, then sent (as chaos's `fault hold-alter-partition`
        and its release do): what a slow path to the controller delivers late. An incarnation that ended meanwhile
        took its held requests with it; a new one holds nothing."""
        process = self.processes[node_id]
        broker = process.parts.get("broker")
        if broker is None:
            self.note(f"hold-alter-partition: broker {node_id} is not running")
            return
        incarnation = process.incarnation
        broker.manager.alter_partition.holding = True
        await wait(down_s)
        if process.incarnation is incarnation and process.running:
            released = process.run_as(broker.manager.alter_partition.release)
            self.note(f"hold-alter-partition: broker {node_id} sent {released} held request(s)")

    async def _slow_disk(self, node_id: int | None, step: FaultStep, wait: Callable[[float], Awaitable[None]]) -> None:
        if node_id is None:
            self.note("slow-disk: no active controller")
            await wait(step.down_s)
            return
        slow = self.slow_disk(node_id, step.down_s, f"{self.settings.seed}:slow-disk:{step.at_s}")
        await wait(step.down_s)
        self.heal_disk(node_id, slow)

    def slow_disk(
        self, node_id: int, seconds: float, seed: str, delay_s: tuple[float, float] = SLOW_FSYNC_S
    ) -> SlowSyncs:
        """The node's fsyncs take `delay_s` each (drawn from `seed`'s own generator: the run's other draws are
        unchanged) for `seconds`, across its crashes and restarts (the disk is the machine's): the shipped code
        sees nothing but slow fsyncs."""
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualTimeLoop)
        slow = SlowSyncs(loop.time() + seconds, random.Random(seed), delay_s)
        loop.slow_disks[node_id] = slow
        return slow

    def heal_disk(self, node_id: int, slow: SlowSyncs) -> None:
        """`slow` ends (its pending fsyncs complete by its end); a later slow-disk on the node stays."""
        loop = asyncio.get_running_loop()
        assert isinstance(loop, VirtualTimeLoop)
        if loop.slow_disks.get(node_id) is slow:
            del loop.slow_disks[node_id]

    async def _reassign(self, step: FaultStep) -> None:
        """An operator's AlterPartitionReassignments of partition `target` modulo the partitions to its replicas in
        the step's order, sent as the admin client sends it; a refusal (no active controller reached) is noted: an
        operator's request that failed, no violation."""
        index = step.target % self.topic.partitions
        found = self.committed_image().topics_by_name.get(TOPIC)
        registered = None if found is None else found.partitions.get(index)
        if registered is None:
            self.note(f"reassign: {TOPIC}-{index} is not in the committed metadata")
            return
        current = tuple(registered.replicas)
        replicas = reordered(current, step.replicas)
        refused = await self._in_client(reassign_partition(self.quorum, TOPIC, index, replicas))
        outcome = f"refused ({refused})" if refused else "accepted"
        self.note(f"reassign {TOPIC}-{index} from {list(current)} to {list(replicas)}: {outcome}")

    async def _wipe_controller(self, node_id: int) -> None:
        """The controller's disk lost and replaced; in a dynamic quorum its voter is then replaced, as an operator
        does (a wiped voter that voted again with an empty log could elect a leader missing committed entries)."""
        process = self.processes[node_id]
        old = ""
        if self.dynamic_quorum:
            described = await self._in_client(self.quorum.describe())
            voters = described.current_voters if described is not None else ()
            old = next((v.replica_directory_id for v in voters if v.replica_id == node_id), "")
        await process.crash(power_loss=False)
        new = wipe_and_format(process, self.dynamic_quorum)
        process.start()
        if not old:
            return
        refused = await self._in_client(self.quorum.replace_voter(node_id, old, new))
        if refused:
            raise Violated(Violation("WipedControllerRejoins", refused))
        self.note(f"controller {node_id}: voter removed in directory {old}, added in {new}")
        self.observed.setdefault("voter_replacements", []).append((node_id, old, new))

    @staticmethod
    def _others(node: int) -> list[int]:
        return [n for n in (*CONTROLLER_IDS, *BROKER_IDS) if n != node]

    def _corrupt(self, broker: int) -> None:
        """Flip a bit inside a batch in the middle of the oldest segment of `broker`'s replica of a partition no
        other broker's replica of which was corrupted (at most one replica of each, as Kafka's promise assumes);
        the CRC finds it when the batch is next read."""
        free = [p for p in range(self.topic.partitions) if self.corrupted.get(p, broker) == broker]
        partition = free[self.faults_done % len(free)] if free else None
        segments = sorted((self.processes[broker].data_dir / f"{TOPIC}-{partition}").glob("*.log"))
        target = _batch_to_corrupt(segments, None) if partition is not None and segments else None
        if partition is None or target is None:
            self.note(f"corrupt: broker {broker} holds no batch to corrupt")
            return
        with target.segment.open("r+b") as stream:
            stream.seek(target.position)
            byte = stream.read(1)
            stream.seek(target.position)
            stream.write(bytes([byte[0] ^ 0x01]))
        self.corrupted[partition] = broker
        self.note(f"corrupt: broker {broker} {TOPIC}-{partition} batch at offset {target.base_offset}")

    def _target(self, step: FaultStep) -> int | None:
        if step.kind == REASSIGN:
            return None  # a partition's, not a node's
        if step.kind in ("isolate-controller", "slow-disk"):
            leaders = [n.node for n in self.raft_nodes() if n.leads]
            return max(leaders) if leaders else None
        if step.kind == "isolate-leader":
            leader = self._leading()[step.target % self.topic.partitions]
            return None if leader is None else int(leader.role.broker_id)
        return step.target if not step.groups else None

    async def heal_all(self) -> None:
        self.network.heal()
        for process in self.processes.values():
            if not process.running:
                process.start()

    async def shut_down(self) -> None:
        for process in self.processes.values():
            await process.crash(power_loss=False)


Script = Callable[["World"], Awaitable[None]]


async def _simulate(settings: SimulationSettings, root: Path, trace: Trace, script: Script) -> SimulationResult:
    """Start the cluster, run `script` on it with the invariants checked at every step, then the final read."""
    loop = asyncio.get_running_loop()
    wall_started = time.perf_counter()
    cpu_started = time.process_time()
    world = World(settings, root, trace)
    violation: Violation | None = None
    try:
        await world.start()
        await script(world)
        world.step = "final read"
        if settings.keep_going:
            world.observed["lost"] = world.invariants.lost(world.replicas())
        world.violated(world.invariants.check_all_acknowledged(world.replicas()))
        world.violated(world.log_matching(world.replicas(), {}))
        world.events.ownership.judge(math.inf)
        while world.events.violations:
            world.violated(world.events.violations.pop(0))
    except Violated as violated:
        world.violations.append(violated.violation)
        trace.add(f"{loop.time():10.3f} violation {violated.violation.invariant}: {violated.violation.detail}")
    finally:
        await world.shut_down()
    if settings.network.duplicate_probability:
        world.observed["duplicated_requests"] = world.network.duplicates
    if settings.torn_writes:
        world.observed["torn_files"] = sum(process.torn_files for process in world.processes.values())
    violation = world.violations[0] if world.violations else None
    explained = None
    if violation is not None and violation.invariant in LOSSES and world.overlapping:
        explained = (
            f"{'; '.join(world.overlapping)}: more than one replica away at once, beyond Kafka's promise for "
            f"acks=all with {settings.topic.described}"
        )
    elif violation is not None and violation.comeback is not None:
        retention_ms = delete_retention_ms({**settings.overrides, **settings.broker_overrides})
        explained = explain_comeback(world.log_ends, violation.comeback, retention_ms, STEP_S)
    return SimulationResult(
        settings.seed,
        violation,
        loop.time(),
        world.step,
        trace.digest.hexdigest()[:16],
        list(trace.tail),
        world.acked,
        world.faults_done,
        loop.time(),
        time.perf_counter() - wall_started,
        time.process_time() - cpu_started,
        dict(world.observed),
        list(world.violations),
        explained,
    )


async def run_fault_plan(world: World) -> None:
    """The seed's `chaos` fault plan under a running producer; every cut healed and node started at the end."""
    settings = world.settings
    loop = asyncio.get_running_loop()
    plan = plan_faults(
        settings.seed,
        settings.faults,
        ChaosPlanConfig(
            settings.duration_s,
            BROKER_IDS,
            CONTROLLER_IDS,
            timing=settings.timing,
            overlap=settings.overlap,
            max_at_once=settings.max_at_once,
        ),
    )
    stop = asyncio.Event()
    clients = world.start_clients(stop)
    producing = world.producing
    try:
        started = loop.time()
        for steps in overlapping_groups(plan):
            await world.run_for(max(0.0, started + steps[0].at_s - loop.time()))
            await world.inject(steps)
        world.step = "final read"
        await world.heal_all()
        await world.run_until(world.recovered, RECOVERY_TIMEOUT_S)
        stop.set()
        if world.killing is not None:
            world.killing.cancel()
        await world.run_until(lambda: all(p.done() for p in producing), 60)
        await world.run_for(QUIET_S)
        if len(clients) > len(producing):
            await world.run_until(world.read_everything, READ_ALL_TIMEOUT_S)
            if settings.clients.exactly_once:
                await world.finish_exactly_once()
            world.check_reads()
    finally:
        stop.set()
        for client in clients:
            client.cancel()


def _entry_epoch(core: Any, offset: int) -> int:
    return int(core.entry(offset).epoch)


def _read_raw(log: Any, offset: int, max_bytes: int) -> bytes:
    """Whole batches from the one holding `offset`, read from the segments as they are: unlike `log.read` no CRC is
    checked and no failure is reported to the broker (the world looks at its disk; it must not change what it
    watches, as a read finding a flipped bit would take the log dir offline)."""
    if not log.log_start_offset <= offset < log.log_end_offset:
        return b""
    slot = bisect.bisect_right([s.base_offset for s in log.segments], offset) - 1
    for segment in log.segments[max(slot, 0) :]:
        data = _segment_from(segment, offset, max_bytes)
        if data:
            return data
    return b""


def _segment_from(segment: Any, offset: int, max_bytes: int) -> bytes:
    """What `segment.read(offset, max_bytes, None, True)` answers: the segment from the first whole batch whose last
    offset is at or after `offset` (none past a torn or impossible header), its headers walked in one read of the
    file from the index entry before `offset` rather than one read per header."""
    _indexed, position = segment.index.lookup(offset)
    if segment.log.size - position > max_bytes:
        return bytes(segment.read(offset, max_bytes, None, True))
    data = segment.log.read(position, segment.log.size - position)
    try:
        for batch in header_spans(data, 0, require_body=False):
            if batch.position + batch.size > len(data):
                return b""
            if batch.last_offset >= offset:
                return bytes(data[batch.position :])
    except CorruptRecordError:
        pass
    return b""


def _read_batches(log: Any, start: int, end: int) -> list[BatchHeader]:
    found: list[BatchHeader] = []
    offset = start
    try:
        while offset < end:
            data = _read_raw(log, offset, 1 << 20)
            batches = batches_between(data, offset, end) if data else []
            if not batches:
                break
            found.extend(batches)
            offset = batches[-1].last_offset + 1
    except (KafkaError, CorruptRecordError, OSError):  # a torn tail, or a segment deleted meanwhile
        pass
    return found


def _epoch_start(log: Any, leader_epoch: int) -> int:
    """Where `leader_epoch` starts in the log's leader epoch cache, -1 if it has no entry for it."""
    return next((entry.start_offset for entry in log.epoch_cache.entries if entry.epoch == leader_epoch), -1)


def _read_values(log: Any, start: int, end: int) -> dict[int, bytes]:
    values: dict[int, bytes] = {}
    offset = start
    try:
        while offset < end:
            data = _read_raw(log, offset, 1 << 20)
            if not data:
                break
            found = records_between(data, offset, end)
            if found.next_offset <= offset:
                break
            values.update(found.values)
            offset = found.next_offset
    except (KafkaError, CorruptRecordError, OSError):  # outside the log, a torn or corrupted batch
        pass
    return values


def scratch_root(parent: str | None = None) -> Path:
    """Where the nodes' files go: `parent`, else tmpfs when the machine has one (the simulated disk's contents are
    scratch)."""
    shm = Path("/dev/shm")
    where = parent if parent is not None else (shm if shm.is_dir() else None)
    return Path(tempfile.mkdtemp(prefix="minikafka-sim-", dir=where))


def simulate_seed(settings: SimulationSettings, script: Script = run_fault_plan) -> SimulationResult:
    """Run one seed to its end or its first violation: its fault plan, or a scripted story.

    With a data guard off, a loss after overlapping faults is explained only if the same seed with the guards on
    loses too: the run is looking for the loss a guard prevents, and one the guards would not have prevented is not
    it."""
    result = _run_seed(settings, script)
    if result.explained is None or not guards_off(settings.overrides, settings.broker_overrides):
        return result
    guarded = _run_seed(
        dataclasses.replace(
            settings, overrides=guards_on(settings.overrides), broker_overrides=guards_on(settings.broker_overrides)
        ),
        script,
    )
    if guarded.violation is None:
        result.explained = None
        result.observed["guards_on"] = f"the same seed held with the guards on (trace {guarded.trace_hash})"
    return result


def _run_seed(settings: SimulationSettings, script: Script) -> SimulationResult:
    if settings.clients.seeded:
        drawn = dataclasses.replace(seeded_mix(settings.seed), group_protocol=settings.clients.group_protocol)
        settings = dataclasses.replace(settings, clients=drawn)
    trace = Trace(settings.watched_events)
    structlog.configure(  # every node's events reach the trace, whatever the command configured
        processors=[trace.processor],
        wrapper_class=structlog.make_filtering_bound_logger(0),
        cache_logger_on_first_use=False,
    )
    root = scratch_root(settings.scratch)
    trace.scratch = str(root)
    try:
        with planted(settings.planted_bug), _collected_by_steps():
            loop = VirtualTimeLoop(settings.seed, executor_latency_ms=FSYNC_LATENCY_MS)
            loop.set_exception_handler(trace.unhandled)
            try:
                return loop.run_until_complete(_simulate(settings, root, trace, script))
            finally:
                _close(loop)
    finally:
        structlog.reset_defaults()
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def _collected_by_steps() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.collect()
    gc.freeze()  # what exists before the run (modules, classes) is never scanned again during it
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()


def _close(loop: asyncio.AbstractEventLoop) -> None:
    """As `asyncio.run` ends a loop: its tasks cancelled and given (simulated) time to unwind, its async generators
    closed. Otherwise they are finalized by a later collection, outside this loop, and run code there."""
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    with contextlib.suppress(Exception):  # a node's leftovers must not fail a run that has its result
        if tasks:
            loop.run_until_complete(asyncio.wait(tasks, timeout=CLOSE_TIMEOUT_S))
        loop.run_until_complete(asyncio.wait_for(loop.shutdown_asyncgens(), CLOSE_TIMEOUT_S))
    loop.close()
