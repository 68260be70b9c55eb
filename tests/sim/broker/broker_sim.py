"""Deterministic simulation of one partition replicated over brokers driven by the pure partition core.

One scheduler, a manual clock and a seeded RNG. Each broker keeps an in-memory log of (leader epoch, value) with a
flushed-prefix marker, so a crash loses exactly the unflushed suffix. Fetch requests/responses and AlterPartition
requests/responses travel over a simulated network with delays and drops; metadata updates reach each broker in
order after a delay. The controller is `ControllerModel`, or the production controller core behind the same interface
(`sim_kraft_controller.KraftController`). Invariants are checked after every step.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

from sim_controller_model import ControllerModel, MetadataSnapshot

from minikafka.broker.replica.delayed_produce import DelayedProduceQueue, PendingProduce
from minikafka.broker.replica.divergence import EpochEndOffset, diverging_epoch
from minikafka.broker.replica.partition import (
    AlterPartitionProposal,
    AlterPartitionResult,
    AssignEpochStartOffset,
    FailPendingProduces,
    Follower,
    Leader,
    PartitionConfig,
    PendingExpandIsr,
    PendingShrinkIsr,
    Role,
    SendAlterPartition,
    StartFetching,
    apply_metadata,
)
from minikafka.common.errors import ErrorCode
from minikafka.storage.leader_epoch_cache import LeaderEpochCache

LABEL = "sim-0"
TOPIC = "sim"


class InvariantViolation(AssertionError):
    pass


@dataclass
class SimLog:
    """A partition log in memory, with the production leader-epoch cache (its lookups answer the divergence)."""

    entries: list[tuple[int, int]] = field(default_factory=list)  # offset = index: (leader epoch, value)
    flushed: int = 0
    epochs: LeaderEpochCache = field(default_factory=lambda: LeaderEpochCache(None))

    @property
    def end(self) -> int:
        return len(self.entries)

    def append(self, leader_epoch: int, value: int) -> None:
        if leader_epoch > self.epochs.latest_epoch:  # as PartitionLog's appends: a new epoch starts here
            self.epochs.assign(leader_epoch, self.end)
        self.entries.append((leader_epoch, value))

    def truncate(self, offset: int) -> None:
        """As PartitionLog.truncate_to: cut whole entries, then drop cached epochs starting at or past the end."""
        del self.entries[offset:]
        self.flushed = min(self.flushed, self.end)
        self.epochs.truncate_from_end(self.end)

    def end_offset_for_epoch(self, epoch: int) -> EpochEndOffset:
        return EpochEndOffset(*self.epochs.end_offset_for(epoch, self.end))


@dataclass
class SimBroker:
    broker_id: int
    broker_epoch: int
    log: SimLog = field(default_factory=SimLog)
    up: bool = True
    role: Role | None = None
    broker_epochs: dict[int, int] = field(default_factory=dict)  # from the latest metadata
    hwm_checkpoint: int = 0
    fetch_id: int = 0
    fetch_sent_ms: int | None = None
    alter_in_flight: tuple[AlterPartitionProposal, int] | None = None
    held_alter: list[AlterPartitionProposal] = field(default_factory=list)
    hold_alter_partition: bool = False
    produces: DelayedProduceQueue = field(default_factory=lambda: DelayedProduceQueue(LABEL))
    last_metadata_ms: int = 0

    @property
    def high_watermark(self) -> int:
        return self.role.high_watermark if self.role is not None else min(self.hwm_checkpoint, self.log.end)


@dataclass(frozen=True)
class Message:
    deliver_ms: int
    seq: int
    src: int
    dst: int
    kind: str
    body: Any


@dataclass
class SimConfig:
    brokers: int = 3
    min_insync_replicas: int = 2
    replica_lag_time_max_ms: int = 300
    session_timeout_ms: int = 400
    fetch_timeout_ms: int = 100
    alter_partition_timeout_ms: int = 150
    max_delay_ms: int = 25
    drop_probability: float = 0.03
    produce_probability: float = 0.2
    flush_probability: float = 0.05
    crash_probability: float = 0.004
    hold_probability: float = 0.004  # the leader holds its AlterPartition requests for a while (KIP-903 race)
    cut_probability: float = 0.004  # one direction of one link drops everything for a while
    wipe_disk_probability: float = 0.2
    produce_timeout_ms: int = 500
    broker_epoch_check: bool = True
    strict_min_isr: bool = True  # KIP-966's HWM rule (eligible.leader.replicas.version 1)


class BrokerSim:
    def __init__(
        self, seed: int, config: SimConfig | None = None, isr: list[int] | None = None, controller: Any = None
    ) -> None:
        self.config = config or SimConfig()
        self.rng = random.Random(seed)
        self.now_ms = 0
        ids = tuple(range(self.config.brokers))
        self.controller = controller or ControllerModel(ids, list(isr or ids), self.config.broker_epoch_check)
        self.brokers = {b: SimBroker(b, self.controller.brokers[b].broker_epoch) for b in ids}
        self.partition_config = PartitionConfig(
            self.config.min_insync_replicas, self.config.replica_lag_time_max_ms, self.config.strict_min_isr
        )
        self.clean_stops: dict[int, int] = {}  # broker -> the epoch it stopped cleanly with
        self.messages: list[Message] = []
        self.seq = 0
        self.cut: set[tuple[int, int]] = set()  # (src, dst) links that drop everything
        self.acked: dict[int, int] = {}  # offset -> value of every acknowledged acks=all write
        self.produce_ids: dict[int, tuple[int, int]] = {}  # request id -> (offset, value)
        self.next_value = 1
        self.leader_hwm: dict[tuple[int, int], int] = {}  # (broker, leader epoch) -> highest HWM seen
        self.down_since: dict[int, int] = {}
        self.restart_at: dict[int, int] = {}
        self.unfence_at: dict[int, int] = {}
        self.release_at: dict[int, int] = {}
        self.heal_at: dict[tuple[int, int], int] = {}
        self.stats = {"acked": 0, "crashes": 0, "expansions": 0, "shrinks": 0, "rollbacks": 0, "truncations": 0}
        self._publish(immediate=True)

    # ---- metadata ----

    def _publish(self, immediate: bool = False) -> None:
        snapshot = self.controller.snapshot()
        for broker in self.brokers.values():
            if not broker.up:
                continue
            delay = 0 if immediate else self.rng.randint(1, self.config.max_delay_ms)
            # Updates reach a broker in order: never before the previous one.
            deliver = max(self.now_ms + delay, broker.last_metadata_ms)
            broker.last_metadata_ms = deliver
            self._enqueue(Message(deliver, self._seq(), -1, broker.broker_id, "metadata", snapshot), reliable=True)

    def _apply_metadata(self, broker: SimBroker, snapshot: MetadataSnapshot) -> None:
        broker.broker_epochs = dict(snapshot.broker_epochs)
        transition = apply_metadata(
            broker.role,
            LABEL,
            broker.broker_id,
            broker.broker_epoch,
            snapshot.partition,
            broker.log.end,
            broker.high_watermark,
            self._partition_config(broker, snapshot),
            self.now_ms,
        )
        if transition is None:
            return
        if isinstance(broker.role, Leader) and not isinstance(transition.state, Leader):
            broker.alter_in_flight = None
        broker.role = transition.state
        for effect in transition.effects:
            if isinstance(effect, StartFetching):
                broker.fetch_id += 1
                broker.fetch_sent_ms = None
            elif isinstance(effect, FailPendingProduces):
                broker.produces, _done = broker.produces.fail_all(effect.error)
            elif isinstance(effect, AssignEpochStartOffset):
                broker.log.epochs.assign(effect.leader_epoch, effect.start_offset)
        self._after_leader_change(broker)

    def _partition_config(self, broker: SimBroker, snapshot: MetadataSnapshot) -> PartitionConfig:
        """With the production controller behind it, a broker takes min.insync.replicas from the metadata image
        as a production broker does, its own static value being the fallback."""
        if snapshot.image is None:
            return self.partition_config
        # As ReplicaManager.min_insync_replicas: the topic's, else the dynamic broker one, else the static one.
        min_isr = snapshot.image.min_insync_replicas(TOPIC, self.config.min_insync_replicas, broker.broker_id)
        return replace(self.partition_config, min_insync_replicas=min_isr)

    # ---- network ----

    def _seq(self) -> int:
        self.seq += 1
        return self.seq

    def _enqueue(self, message: Message, reliable: bool = False) -> None:
        if not reliable and (
            (message.src, message.dst) in self.cut or self.rng.random() < self.config.drop_probability
        ):
            return
        self.messages.append(message)

    def _send(self, src: int, dst: int, kind: str, body: Any) -> None:
        delay = self.rng.randint(1, self.config.max_delay_ms)
        self._enqueue(Message(self.now_ms + delay, self._seq(), src, dst, kind, body))

    def _deliver_due(self) -> None:
        due = sorted((m for m in self.messages if m.deliver_ms <= self.now_ms), key=lambda m: (m.deliver_ms, m.seq))
        if not due:
            return
        self.messages = [m for m in self.messages if m.deliver_ms > self.now_ms]
        for message in due:
            if message.dst == -1:
                self._controller_receive(message)
                continue
            broker = self.brokers[message.dst]
            if not broker.up:
                continue
            if message.kind == "metadata":
                self._apply_metadata(broker, message.body)
            elif message.kind == "fetch":
                self._leader_handle_fetch(broker, message)
            elif message.kind == "fetch_response":
                self._follower_handle_response(broker, message.body)
            elif message.kind == "alter_partition_response":
                self._handle_alter_partition_response(broker, *message.body)

    # ---- replication ----

    def _leader_handle_fetch(self, broker: SimBroker, message: Message) -> None:
        fetch_id, replica_epoch, leader_epoch, fetch_offset, last_fetched_epoch = message.body
        role = broker.role
        reply: dict[str, Any] = {
            "fetch_id": fetch_id,
            "leader_id": broker.broker_id,
            "leader_epoch": leader_epoch,
            "fetch_offset": fetch_offset,
        }
        if not isinstance(role, Leader):
            reply["error"] = ErrorCode.NOT_LEADER_OR_FOLLOWER
        elif role.check_current_leader_epoch(leader_epoch) != ErrorCode.NONE:
            reply["error"] = role.check_current_leader_epoch(leader_epoch)
        else:
            reply["error"] = ErrorCode.NONE
            if last_fetched_epoch >= 0:
                leader_end = broker.log.end_offset_for_epoch(last_fetched_epoch)
                diverging = diverging_epoch(leader_end, last_fetched_epoch, fetch_offset)
                if diverging is not None:
                    reply["diverging"] = diverging
            if "diverging" not in reply:
                decision = role.on_follower_fetch(
                    message.src, replica_epoch, leader_epoch, fetch_offset, broker.broker_epochs, self.now_ms
                )
                broker.role = decision.state
                reply["error"] = decision.error
                if decision.error == ErrorCode.NONE:
                    reply["records"] = list(broker.log.entries[fetch_offset : fetch_offset + 20])
                if decision.proposal is not None:
                    self.stats["expansions"] += 1
                    self._send_alter_partition(broker, decision.proposal)
                self._after_leader_change(broker)
            reply["high_watermark"] = broker.role.high_watermark
        self._send(broker.broker_id, message.src, "fetch_response", reply)

    def _follower_handle_response(self, broker: SimBroker, reply: dict[str, Any]) -> None:
        role = broker.role
        if reply["fetch_id"] != broker.fetch_id or not isinstance(role, Follower):
            return
        broker.fetch_sent_ms = None
        if not role.accepts_answer(reply["leader_id"], reply["leader_epoch"], reply["fetch_offset"], broker.log.end):
            return  # the leader or our log changed while the fetch was in flight
        if reply["error"] != ErrorCode.NONE:
            return
        if "diverging" in reply:
            diverging = reply["diverging"]
            truncation = role.truncation(diverging, broker.log.end_offset_for_epoch(diverging.epoch), broker.log.end)
            if truncation.offset < broker.log.end:
                self.stats["truncations"] += 1
            broker.log.truncate(truncation.offset)
            broker.role = role.on_truncate(broker.log.end)
            return
        for leader_epoch, value in reply["records"]:
            broker.log.append(leader_epoch, value)
        broker.role = role.on_fetch_response(reply["high_watermark"], broker.log.end)

    def _send_fetch(self, broker: SimBroker) -> None:
        role = broker.role
        assert isinstance(role, Follower)
        broker.fetch_id += 1
        broker.fetch_sent_ms = self.now_ms
        body = (broker.fetch_id, broker.broker_epoch, role.leader_epoch, broker.log.end, broker.log.epochs.latest_epoch)
        self._send(broker.broker_id, role.leader_id, "fetch", body)

    # ---- AlterPartition ----

    def _send_alter_partition(self, broker: SimBroker, proposal: AlterPartitionProposal) -> None:
        if broker.hold_alter_partition:
            broker.held_alter.append(proposal)
            return
        broker.alter_in_flight = (proposal, self.now_ms)
        self._send(broker.broker_id, -1, "alter_partition", (broker.broker_id, broker.broker_epoch, proposal))

    def release_alter_partition(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        broker.hold_alter_partition = False
        held, broker.held_alter = broker.held_alter, []
        for proposal in held:
            self._send_alter_partition(broker, proposal)

    def _controller_receive(self, message: Message) -> None:
        requester, requester_epoch, proposal = message.body
        result = self.controller.alter_partition(requester, requester_epoch, proposal)
        if result.error == ErrorCode.NONE:
            self._publish()
        self._send(-1, requester, "alter_partition_response", (proposal, result))

    def _handle_alter_partition_response(
        self, broker: SimBroker, proposal: AlterPartitionProposal, result: AlterPartitionResult
    ) -> None:
        if broker.alter_in_flight is not None and broker.alter_in_flight[0] == proposal:
            broker.alter_in_flight = None
        if not isinstance(broker.role, Leader):
            return
        before = broker.role.isr_state
        broker.role, effects = broker.role.on_alter_partition_response(proposal, result, self.now_ms)
        if result.error != ErrorCode.NONE and before is not broker.role.isr_state:
            self.stats["rollbacks"] += 1
        for effect in effects:
            if isinstance(effect, SendAlterPartition):
                self._send_alter_partition(broker, effect.proposal)
        self._after_leader_change(broker)

    # ---- produce ----

    def produce(self) -> int | None:
        """An acks=all write to a broker that believes it leads (possibly a stale one). Returns its value."""
        leaders = [b for b in self.brokers.values() if b.up and isinstance(b.role, Leader)]
        if not leaders:
            return None
        broker = self.rng.choice(leaders)
        role = broker.role
        assert isinstance(role, Leader)
        if role.check_produce(-1) != ErrorCode.NONE:
            return None
        value = self.next_value
        self.next_value += 1
        offset = broker.log.end
        broker.log.append(role.leader_epoch, value)
        broker.role, _moved = role.on_local_append(broker.log.end, self.now_ms)
        self.produce_ids[value] = (offset, value)
        pending = PendingProduce(value, offset + 1, self.now_ms + self.config.produce_timeout_ms)
        broker.produces = broker.produces.add(pending)
        self._after_leader_change(broker)
        return value

    def _after_leader_change(self, broker: SimBroker) -> None:
        role = broker.role
        if not isinstance(role, Leader):
            return
        key = (broker.broker_id, role.leader_epoch)
        self.leader_hwm[key] = max(self.leader_hwm.get(key, -1), role.high_watermark)
        broker.produces, done = broker.produces.check(
            role.high_watermark, len(role.isr), role.effective_min_isr, self.now_ms
        )
        for completion in done:
            if completion.error == ErrorCode.NONE:
                offset, value = self.produce_ids[completion.request_id]  # type: ignore[index]
                self.acked[offset] = value
                self.stats["acked"] += 1

    # ---- faults ----

    def crash(self, broker_id: int, wipe_disk: bool = False) -> None:
        broker = self.brokers[broker_id]
        if broker.log.flushed < broker.log.end or wipe_disk:
            self.clean_stops.pop(broker_id, None)
        broker.up = False
        broker.role = None
        broker.alter_in_flight = None
        broker.held_alter = []
        broker.produces = DelayedProduceQueue(LABEL)
        if wipe_disk:
            broker.log = SimLog()
            broker.hwm_checkpoint = 0
        else:
            broker.log.truncate(broker.log.flushed)  # power loss: the unflushed suffix is gone
        self.down_since[broker_id] = self.now_ms
        self.stats["crashes"] += 1

    def stop(self, broker_id: int) -> None:
        """A clean shutdown: everything flushed, nothing lost; its next incarnation names this epoch."""
        self.flush(broker_id)
        self.clean_stops[broker_id] = self.brokers[broker_id].broker_epoch
        self.crash(broker_id)

    def restart(self, broker_id: int) -> None:
        """A new incarnation registers first (a new broker epoch), then learns the metadata."""
        broker = self.brokers[broker_id]
        broker.up = True
        previous = self.clean_stops.pop(broker_id, -1)
        broker.broker_epoch = self.controller.register(broker_id, previous_broker_epoch=previous)
        broker.last_metadata_ms = self.now_ms
        broker.fetch_sent_ms = None
        self.down_since.pop(broker_id, None)
        self.restart_at.pop(broker_id, None)
        self.unfence_at[broker_id] = self.now_ms + self.rng.randint(10, 60)
        self._publish(immediate=True)

    def flush(self, broker_id: int) -> None:
        broker = self.brokers[broker_id]
        broker.log.flushed = broker.log.end
        broker.hwm_checkpoint = broker.high_watermark

    def crash_allowed(self, broker_id: int) -> bool:
        """Stay within what replication tolerates: one broker down at a time, and another current ISR member
        keeps every acknowledged write (losing the unflushed data of all of them at once is a real loss)."""
        if any(not b.up for b in self.brokers.values()) or self.unfence_at:
            return False
        others = [b for b in self.controller.isr if b != broker_id and self._current(b)]
        return bool(others)

    def _current(self, broker_id: int) -> bool:
        broker = self.brokers[broker_id]
        registration = self.controller.brokers[broker_id]
        return broker.up and registration.broker_epoch == broker.broker_epoch and not registration.fenced

    # ---- the scheduler ----

    def tick(self) -> None:
        """Timers of every node, at the current time."""
        for broker_id, since in list(self.down_since.items()):
            if self.now_ms - since >= self.config.session_timeout_ms and not self.controller.brokers[broker_id].fenced:
                self.controller.fence(broker_id)
                self._publish()
        for broker_id, at in list(self.restart_at.items()):
            if self.now_ms >= at:
                self.restart(broker_id)
        for broker_id, at in list(self.unfence_at.items()):
            if self.now_ms >= at:
                del self.unfence_at[broker_id]
                self.controller.unfence(broker_id)
                self._publish()
        for broker_id, at in list(self.release_at.items()):
            if self.now_ms >= at:
                del self.release_at[broker_id]
                self.release_alter_partition(broker_id)
        for link, at in list(self.heal_at.items()):
            if self.now_ms >= at:
                del self.heal_at[link]
                self.cut.discard(link)
        for broker in self.brokers.values():
            if not broker.up:
                continue
            role = broker.role
            if isinstance(role, Follower) and role.leader_id >= 0:
                idle = broker.fetch_sent_ms is None
                if idle or self.now_ms - broker.fetch_sent_ms >= self.config.fetch_timeout_ms:
                    self._send_fetch(broker)
            elif isinstance(role, Leader):
                role, proposal = role.maybe_shrink_isr(self.now_ms, broker.broker_epochs)
                broker.role = role
                if proposal is not None:
                    self.stats["shrinks"] += 1
                    self._send_alter_partition(broker, proposal)
                in_flight = broker.alter_in_flight
                if in_flight is not None and self.now_ms - in_flight[1] >= self.config.alter_partition_timeout_ms:
                    state = role.isr_state
                    if isinstance(state, PendingExpandIsr | PendingShrinkIsr) and state.proposal == in_flight[0]:
                        self._send_alter_partition(broker, in_flight[0])  # no answer: the same request again
                    else:
                        broker.alter_in_flight = None
                self._after_leader_change(broker)

    def step(self, faults: bool = True, check: bool = True) -> None:
        self.now_ms += self.rng.randint(1, 10)
        self._deliver_due()
        self.tick()
        if faults:
            self._random_action()
        if check:
            self.check_invariants()

    def _random_action(self) -> None:
        r = self.rng.random()
        c = self.config
        if r < c.produce_probability:
            self.produce()
            return
        r -= c.produce_probability
        if r < c.flush_probability:
            self.flush(self.rng.randrange(c.brokers))
            return
        r -= c.flush_probability
        if r < c.crash_probability:
            victim = self.rng.randrange(c.brokers)
            if self.crash_allowed(victim):
                self.crash(victim, wipe_disk=self.rng.random() < c.wipe_disk_probability)
                self.restart_at[victim] = self.now_ms + self.rng.randint(20, 3 * c.session_timeout_ms)
            return
        r -= c.crash_probability
        if r < c.hold_probability:
            holder = self.rng.randrange(c.brokers)
            if holder not in self.release_at:
                self.brokers[holder].hold_alter_partition = True
                self.release_at[holder] = self.now_ms + self.rng.randint(50, 3 * c.session_timeout_ms)
            return
        r -= c.hold_probability
        if r < c.cut_probability:
            src, dst = self.rng.sample([-1, *range(c.brokers)], 2)
            self.cut.add((src, dst))
            self.heal_at[(src, dst)] = self.now_ms + self.rng.randint(50, 2 * c.session_timeout_ms)

    def run_until(self, condition: Any, deadline_ms: int, check: bool = True) -> bool:
        """Step without random faults until `condition()` holds or `deadline_ms` of simulated time pass."""
        end = self.now_ms + deadline_ms
        while self.now_ms < end:
            if condition():
                return True
            self.step(faults=False, check=check)
        return condition()

    # ---- invariants ----

    def violations(self) -> list[str]:
        found: list[str] = []
        isr = self.controller.isr
        if not isr and not getattr(self.controller, "elr_enabled", False):
            found.append("IsrNeverEmpty: the controller's ISR is empty")
        # KIP-966 ElrCompleteness: every acknowledged write is on every current ELR member.
        for member in getattr(self.controller, "elr", []):
            entries = self.brokers[member].log.entries
            lacking = [o for o, v in self.acked.items() if o >= len(entries) or entries[o][1] != v]
            if self.brokers[member].up and lacking:
                found.append(f"ElrCompleteness: ELR member {member} lacks acked offset {min(lacking)}")
        # LeaderCandidateCompleteness: every acknowledged write is on every current ISR member.
        for member in isr:
            if not self._current(member):
                continue
            entries = self.brokers[member].log.entries
            for offset, value in self.acked.items():
                if offset >= len(entries) or entries[offset][1] != value:
                    found.append(f"LeaderCandidateCompleteness: ISR member {member} lacks acked offset {offset}")
                    break
        # The HWM never decreases within a leader epoch on the leader.
        for broker in self.brokers.values():
            role = broker.role
            if broker.up and isinstance(role, Leader):
                seen = self.leader_hwm.get((broker.broker_id, role.leader_epoch), -1)
                if role.high_watermark < seen:
                    found.append(f"HighWatermarkMonotonic: broker {broker.broker_id} {role.high_watermark} < {seen}")
        # ReplicationQuorumSuperset: the leader's Maximal ISR contains the controller's ISR.
        leader = self.brokers.get(self.controller.leader)
        role = leader.role if leader is not None and leader.up else None
        current_leader = isinstance(role, Leader) and role.leader_epoch == self.controller.leader_epoch
        if current_leader and not set(isr) <= role.maximal_isr:  # type: ignore[union-attr]
            found.append(f"ReplicationQuorumSuperset: maximal {sorted(role.maximal_isr)} lacks some of {isr}")
        # KIP-903: no ISR member was admitted with a broker epoch other than its registration's.
        for broker_id, committed, current in self.controller.stale_commits:
            found.append(f"StaleBrokerEpochCommitted: broker {broker_id} epoch {committed}, registered {current}")
        # LogMatching: replicas agree below both HWMs.
        up = [b for b in self.brokers.values() if b.up]
        for i, a in enumerate(up):
            for b in up[i + 1 :]:
                limit = min(a.high_watermark, b.high_watermark)
                if a.log.entries[:limit] != b.log.entries[:limit]:
                    found.append(f"LogMatching: brokers {a.broker_id} and {b.broker_id} differ below {limit}")
        return found

    def check_invariants(self) -> None:
        found = self.violations()
        if found:
            raise InvariantViolation(f"t={self.now_ms}ms: " + "; ".join(found))

    def lost_acked_writes(self) -> list[int]:
        """Acknowledged offsets whose value is on no replica any more."""
        lost = []
        for offset, value in self.acked.items():
            if not any(offset < b.log.end and b.log.entries[offset][1] == value for b in self.brokers.values() if b.up):
                lost.append(offset)
        return lost
