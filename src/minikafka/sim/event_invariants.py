"""`analyze`'s event invariants, checked on the simulated nodes' events as they are logged (analyze reads the same
events from a real run's JSON logs, in Spark; the names, meanings and descriptions are its own, from
`deploy/analysis/report.py`).

The controllers log each committed metadata record when they replay it, with its offset; every controller replays
the same offsets in order, so the first time an offset is seen every lower one has been seen: later replays of it
(the other controllers, a restarted one replaying its log again) are only compared with it (MetadataLogMatching).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from minikafka.kraft_controller.control.record_events import RECORD_IDENTITY_FIELDS
from minikafka.sim.consumer_group_ownership import EVENTS as OWNERSHIP_EVENTS
from minikafka.sim.consumer_group_ownership import ConsumerGroupOwnership
from minikafka.sim.invariants import Violation

_REPLAYED = ("partition_changed", "broker_registered")


@dataclass(frozen=True)
class Registration:
    offset: int
    broker_epoch: int
    unclean: bool  # the incarnation started without a clean-shutdown record: its unflushed tail may be gone
    incarnation_id: str = ""
    # Where the incarnation first registered: a registration of the same incarnation again (a request replayed or
    # retried) is no new start, and Kafka's controller keeps its ELR memberships (KIP-966 checks a new incarnation).
    started_at: int = -1


@dataclass(frozen=True)
class Epochs:
    leader_epoch: int
    partition_epoch: int


@dataclass(frozen=True)
class ReplayedRecord:
    """The first replay seen at a metadata offset: which controller, and the record's identity fields."""

    controller: int
    identity: tuple[Any, ...]


@dataclass
class EventInvariants:
    """Fed every event of every node (`observe`); a broken invariant is kept in `violations` in the order found.
    `controllers`: the node ids whose offset-bearing events are metadata replays (none: MetadataLogMatching off)."""

    controllers: frozenset[int] = frozenset()
    violations: list[Violation] = field(default_factory=list)
    records_at: dict[int, ReplayedRecord] = field(default_factory=dict)  # metadata offset -> its first replay
    replayed_to: int = -1  # the highest metadata offset seen replayed
    registrations: dict[int, list[Registration]] = field(default_factory=dict)  # broker -> in offset order
    clean_start: dict[int, bool] = field(default_factory=dict)  # broker -> its newest start was after a clean stop
    # A topic deleted and created again is a new topic (a new topic id, leader epochs from 0): keyed by topic id.
    committed_leaders: dict[tuple[str, str, int], int] = field(default_factory=dict)  # (topic id, tp, epoch) -> leader
    acting: dict[tuple[str, str, int], set[int]] = field(default_factory=dict)  # (topic id, tp, epoch) -> brokers
    newest_topic_ids: dict[str, str] = field(default_factory=dict)  # tp -> its newest incarnation's, as replayed
    # (broker, tp) -> the topic id of the log it hosts: the newest incarnation when it first took a role after it
    # last deleted one ("": no incarnation replayed yet, matched with any)
    hosted: dict[tuple[int, str], str] = field(default_factory=dict)
    # (topic id, tp) -> its newest committed epochs: a topic deleted and created again starts its epochs over
    metadata_epochs: dict[tuple[str, str], Epochs] = field(default_factory=dict)
    adopted: dict[tuple[int, int, str], Epochs] = field(default_factory=dict)  # (broker, incarnation, tp)
    isr_since: dict[tuple[str, int], int] = field(default_factory=dict)  # (tp, broker) -> registration offset
    accepted: dict[tuple[str, int, int, tuple[int, ...]], list[tuple[int, int]]] = field(default_factory=dict)
    high_watermarks: dict[tuple[int, int, str, int], int] = field(default_factory=dict)
    last_stable_offsets: dict[tuple[int, int, str, int], int] = field(default_factory=dict)
    ownership: ConsumerGroupOwnership = field(init=False)

    def __post_init__(self) -> None:
        self.ownership = ConsumerGroupOwnership(self._fail)

    def observe(self, node: int | None, incarnation: int, event: Mapping[str, Any], at_s: float = 0.0) -> None:
        name = event.get("event")
        if node in self.controllers and event.get("offset") is not None and not str(name).startswith("raft_"):
            self._record_matches(node, event)  # the Raft layer's own events at an offset are no replays
        if name in OWNERSHIP_EVENTS:
            self.ownership.observe(event, at_s)
        elif name in _REPLAYED:
            offset = event.get("offset")
            if offset is None or offset <= self.replayed_to:
                return
            self.replayed_to = offset
            if name == "broker_registered":
                self._registered(event, offset)
            elif event.get("leader_epoch") is not None:
                self._partition_changed(event, offset)
        elif node is None:
            return
        elif name == "broker_starting":
            self.clean_start[node] = (event.get("previous_broker_epoch") or -1) >= 0
        elif name in ("become_leader", "become_follower"):
            self._adopted(node, incarnation, str(name), event)
        elif name in ("log_deleted", "stray_partition_deleted"):
            # The log is gone: what the broker adopts next for the partition (a re-created topic's) starts over.
            self._log_deleted(node, incarnation, str(event["partition"]))
        elif name == "alter_partition_accepted" and event.get("changed"):
            key = (str(event["topic_id"]), int(event["partition"]), int(event["partition_epoch"]), _isr(event))
            self.accepted[key] = [(int(b), int(e)) for b, e in event.get("proposed_isr") or ()]
        elif name == "high_watermark_advanced":
            self._high_watermark(node, incarnation, event)

    def _fail(self, invariant: str, detail: str) -> None:
        self.violations.append(Violation(invariant, detail))

    def _record_matches(self, controller: int, event: Mapping[str, Any]) -> None:
        offset = int(event["offset"])
        identity = tuple(_hashable(event.get(name)) for name in RECORD_IDENTITY_FIELDS)
        first = self.records_at.setdefault(offset, ReplayedRecord(controller, identity))
        if first.identity != identity:
            self._fail(
                "MetadataLogMatching",
                f"metadata offset {offset}: controller {first.controller} replayed {_described(first.identity)}, "
                f"controller {controller} {_described(identity)}",
            )

    def _registered(self, event: Mapping[str, Any], offset: int) -> None:
        broker = int(event["broker_id"])
        incarnation = str(event.get("incarnation_id") or "")
        earlier = self.registrations.setdefault(broker, [])
        if earlier and incarnation and earlier[-1].incarnation_id == incarnation:
            unclean, started_at = earlier[-1].unclean, earlier[-1].started_at
        else:
            unclean, started_at = not self.clean_start.get(broker, False), offset
        earlier.append(Registration(offset, int(event["broker_epoch"]), unclean, incarnation, started_at))

    def _log_deleted(self, node: int, incarnation: int, tp: str) -> None:
        self.adopted.pop((node, incarnation, tp), None)
        self.hosted.pop((node, tp), None)
        for marks in (self.high_watermarks, self.last_stable_offsets):
            for key in [k for k in marks if k[0] == node and k[2] == tp]:
                del marks[key]

    def _partition_changed(self, event: Mapping[str, Any], offset: int) -> None:
        tp = f"{event['topic']}-{event['partition']}"
        topic_id = str(event.get("topic_id"))
        self.newest_topic_ids[tp] = topic_id
        leader, leader_epoch = int(event["leader"]), int(event["leader_epoch"])
        epochs = Epochs(leader_epoch, int(event["partition_epoch"]))
        first = self.committed_leaders.setdefault((topic_id, tp, leader_epoch), leader)
        if first != leader:
            self._fail(
                "OneLeaderPerLeaderEpoch",
                f"the metadata committed leaders {first} and {leader} for {tp} in leader epoch {leader_epoch} "
                f"(offset {offset})",
            )
        brokers = self.acting.get((topic_id, tp, leader_epoch), set()) | self.acting.get(("", tp, leader_epoch), set())
        for acting in sorted(brokers):
            self._acting_agrees(topic_id, tp, leader_epoch, acting)
        previous = self.metadata_epochs.get((str(event.get("topic_id")), tp))
        if previous is not None and (
            epochs.leader_epoch < previous.leader_epoch or epochs.partition_epoch <= previous.partition_epoch
        ):
            self._fail(
                "EpochsMonotonic",
                f"{tp} at metadata offset {offset}: leader epoch {previous.leader_epoch} -> {epochs.leader_epoch}, "
                f"partition epoch {previous.partition_epoch} -> {epochs.partition_epoch}",
            )
        self.metadata_epochs[(str(event.get("topic_id")), tp)] = epochs
        self._partition_shape(event, tp, offset)
        isr = _isr(event)
        if event.get("reason") == "alter_partition":
            key = (str(event["topic_id"]), int(event["partition"]), epochs.partition_epoch, isr)
            self._stale_members(tp, offset, isr, self.accepted.pop(key, []))
        for broker in isr:
            registration = self._registration(broker, offset)
            self.isr_since[(tp, broker)] = -1 if registration is None else registration.started_at
        for broker in sorted(int(b) for b in event.get("elr") or ()):
            registration = self._registration(broker, offset)
            if (
                registration is not None
                and registration.unclean
                and self.isr_since.get((tp, broker)) != registration.started_at
            ):
                self._fail(
                    "ElrMembersComplete",
                    f"{tp} at metadata offset {offset}: broker {broker} is in the ELR {sorted(event.get('elr') or [])} "
                    f"after registering at offset {registration.started_at} from an unclean shutdown, and has not "
                    "been in an ISR since",
                )

    def _partition_shape(self, event: Mapping[str, Any], tp: str, offset: int) -> None:
        """IsrNeverEmpty and LeaderInIsrAndReplicas, on a committed partition state."""
        leader, isr, replicas = int(event["leader"]), _isr(event), set(event.get("replicas") or ())
        if not isr and not event.get("elr") and not event.get("last_known_elr"):
            self._fail("IsrNeverEmpty", f"{tp} at metadata offset {offset}: an empty ISR, ELR and LastKnownElr")
        if (leader >= 0 and (leader not in isr or leader not in replicas)) or not replicas.issuperset(isr):
            self._fail(
                "LeaderInIsrAndReplicas",
                f"{tp} at metadata offset {offset}: leader {leader}, ISR {list(isr)}, replicas {sorted(replicas)}",
            )

    def _registration(self, broker: int, before: int) -> Registration | None:
        found = [r for r in self.registrations.get(broker, ()) if r.offset < before]
        return found[-1] if found else None

    def _stale_members(self, tp: str, offset: int, isr: tuple[int, ...], proposed: list[tuple[int, int]]) -> None:
        for broker, broker_epoch in proposed:
            if broker_epoch == -1 or broker not in isr:
                continue  # the leader vouches for no epoch of a member that has not fetched yet (Kafka's rule)
            registration = self._registration(broker, offset)
            if registration is None or registration.broker_epoch != broker_epoch:
                current = None if registration is None else registration.broker_epoch
                self._fail(
                    "NoStaleBrokerEpochInIsr",
                    f"{tp} at metadata offset {offset}: AlterPartition committed ISR {list(isr)} with broker {broker} "
                    f"at broker epoch {broker_epoch}; its registration then had epoch {current}",
                )

    def _adopted(self, node: int, incarnation: int, name: str, event: Mapping[str, Any]) -> None:
        tp = str(event["partition"])
        epochs = Epochs(int(event["leader_epoch"]), int(event["partition_epoch"]))
        key = (node, incarnation, tp)
        previous = self.adopted.get(key)
        if previous is not None and (
            epochs.leader_epoch < previous.leader_epoch or epochs.partition_epoch < previous.partition_epoch
        ):
            self._fail(
                "EpochsMonotonic",
                f"broker {node} ({name}) {tp}: leader epoch {previous.leader_epoch} -> {epochs.leader_epoch}, "
                f"partition epoch {previous.partition_epoch} -> {epochs.partition_epoch}",
            )
        self.adopted[key] = epochs
        topic_id = self.hosted.get((node, tp)) or self.newest_topic_ids.get(tp, "")
        self.hosted[(node, tp)] = topic_id
        if name == "become_leader":
            brokers = self.acting.setdefault((topic_id, tp, epochs.leader_epoch), set())
            brokers.add(node)
            self._acting_agrees(topic_id, tp, epochs.leader_epoch, node)
            if len(brokers) > 1:
                self._fail(
                    "OneLeaderPerLeaderEpoch",
                    f"brokers {sorted(brokers)} all acted as leader of {tp} in leader epoch {epochs.leader_epoch}",
                )

    def _acting_agrees(self, topic_id: str, tp: str, leader_epoch: int, broker: int) -> None:
        committed = self.committed_leaders.get((topic_id, tp, leader_epoch))
        if committed is not None and committed != broker:
            self._fail(
                "OneLeaderPerLeaderEpoch",
                f"broker {broker} acted as leader of {tp} in leader epoch {leader_epoch}, which the metadata gave "
                f"broker {committed}",
            )

    def _high_watermark(self, node: int, incarnation: int, event: Mapping[str, Any]) -> None:
        key = (node, incarnation, str(event["partition"]), int(event["leader_epoch"]))
        high_watermark = int(event["high_watermark"])
        previous = self.high_watermarks.get(key)
        if previous is not None and high_watermark < previous:
            self._fail(
                "HighWatermarkMonotonic",
                f"broker {node}, leader of {key[2]} in leader epoch {key[3]}: high watermark {previous} -> "
                f"{high_watermark}",
            )
        self.high_watermarks[key] = high_watermark if previous is None else max(previous, high_watermark)
        if event.get("last_stable_offset") is not None:
            self._last_stable_offset(key, int(event["last_stable_offset"]), high_watermark)

    def _last_stable_offset(self, key: tuple[int, int, str, int], stable: int, high_watermark: int) -> None:
        previous = self.last_stable_offsets.get(key)
        if previous is not None and stable < previous:
            self._fail(
                "LastStableOffsetMonotonic",
                f"broker {key[0]}, leader of {key[2]} in leader epoch {key[3]}: last stable offset {previous} -> "
                f"{stable}",
            )
        if stable > high_watermark:
            self._fail(
                "LastStableOffsetMonotonic",
                f"broker {key[0]}, leader of {key[2]} in leader epoch {key[3]}: last stable offset {stable} above "
                f"its high watermark {high_watermark}",
            )
        self.last_stable_offsets[key] = stable if previous is None else max(previous, stable)


def _isr(event: Mapping[str, Any]) -> tuple[int, ...]:
    return tuple(sorted(int(b) for b in event.get("isr") or ()))


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _described(identity: tuple[Any, ...]) -> str:
    named = zip(RECORD_IDENTITY_FIELDS, identity, strict=True)
    return " ".join(f"{name}={value}" for name, value in named if value is not None)
