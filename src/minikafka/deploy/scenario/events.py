"""The run's JSON event logs as a scenario reads them: find events, and quote them in the protocol's words."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from minikafka.deploy.scenario.model import Evidence


@dataclass(frozen=True)
class EventQuery:
    """Events named one of `names`, logged by a node whose label starts with `node` (e.g. "controller", "broker-1"),
    at or after `since` (an ISO timestamp), whose fields equal `where`."""

    names: tuple[str, ...]
    node: str = ""
    since: str = ""
    where: tuple[tuple[str, object], ...] = ()

    def matches(self, event: Mapping[str, object], source: str) -> bool:
        return (
            event.get("event") in self.names
            and source.startswith(self.node)
            and str(event.get("ts", "")) >= self.since
            and all(event.get(key) == value for key, value in self.where)
        )


def query(names: str | tuple[str, ...], node: str = "", since: str = "", **where: object) -> EventQuery:
    return EventQuery((names,) if isinstance(names, str) else names, node, since, tuple(where.items()))


def find_events(run_dir: Path, q: EventQuery) -> list[tuple[str, dict]]:
    """(source log, event) of every match, oldest first; unreadable lines are skipped (a node may be mid-write)."""
    found = []
    for path in sorted((run_dir / "logs").glob(f"{q.node}*.jsonl") if q.node else (run_dir / "logs").glob("*.jsonl")):
        for line in path.read_text(errors="replace").splitlines():
            if not any(f'"{name}"' in line for name in q.names):
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if q.matches(event, path.stem):
                found.append((path.stem, event))
    return sorted(found, key=lambda pair: str(pair[1].get("ts", "")))


QUOTED_FIELDS = ("ts", "event", "error", "topic", "partition", "leader", "isr", "elr", "leader_epoch", "reason")


def quote(source: str, event: Mapping[str, object]) -> Evidence:
    """The event as evidence: a sentence, and its JSON line as logged."""
    return Evidence(source, sentence(source, event), json.dumps(dict(event), default=str, separators=(",", ":")))


def sentence(source: str, event: Mapping[str, object]) -> str:
    name = str(event.get("event"))
    describe = _SENTENCES.get(name)
    text = describe(event) if describe else _generic(event)
    return f"{source} at {event.get('ts')}: {text}"


def _partition(event: Mapping[str, object]) -> str:
    return f"{event.get('topic')}-{event.get('partition')}"


def _rejected(event: Mapping[str, object]) -> str:
    text = f"AlterPartition for {_partition(event)} answered {event.get('error')}"
    ineligible = event.get("ineligible_replicas")
    details = [
        f"broker {r['broker_id']} {r['reason']} (requested broker epoch {r['requested_broker_epoch']} vs registered "
        f"{r['current_broker_epoch']})"
        for r in (ineligible if isinstance(ineligible, list) else [])
        if isinstance(r, dict)
    ]
    if event.get("error") == "INVALID_UPDATE_VERSION":
        details.append(
            f"requested partition epoch {event.get('actual_partition_epoch')} "
            f"vs current {event.get('expected_partition_epoch')}"
        )
    if "expected_broker_epoch" in event:
        details.append(
            f"requester broker epoch {event.get('actual_broker_epoch')} "
            f"vs registered {event.get('expected_broker_epoch')}"
        )
    return text + (": " + "; ".join(details) if details else "")


def _accepted(event: Mapping[str, object]) -> str:
    proposed = event.get("proposed_isr") or event.get("new_isr_with_epochs")
    epochs = f" (proposed [broker, broker epoch]: {proposed})" if proposed else ""
    return (
        f"AlterPartition for {_partition(event)} accepted: ISR {event.get('isr')}{epochs}, "
        f"partition epoch {event.get('partition_epoch')}"
    )


def _elected(event: Mapping[str, object]) -> str:
    unclean = " UNCLEAN (from outside the ISR)" if event.get("unclean") else ""
    return (
        f"leader of {_partition(event)} is now {event.get('leader')} (was {event.get('previous_leader')}), "
        f"leader epoch {event.get('leader_epoch')}, reason {event.get('reason')}{unclean}"
    )


def _changed(event: Mapping[str, object]) -> str:
    return (
        f"{_partition(event)} committed leader {event.get('leader')}, ISR {event.get('isr')}, ELR {event.get('elr')}, "
        f"last known ELR {event.get('last_known_elr')}, leader epoch {event.get('leader_epoch')}, "
        f"partition epoch {event.get('partition_epoch')} ({event.get('reason')})"
    )


def _registered(event: Mapping[str, object]) -> str:
    return f"broker {event.get('broker_id')} registered with broker epoch {event.get('broker_epoch')}"


def _fault(event: Mapping[str, object]) -> str:
    extra = {k: v for k, v in event.items() if k in ("lose_unflushed", "wipe_disk", "released") and v}
    return f"fault {event.get('fault')} on {event.get('target')}" + (f" {extra}" if extra else "")


def _stray(event: Mapping[str, object]) -> str:
    done = "deleted" if event.get("event") == "stray_partition_deleted" else "kept (check switched off)"
    return f"stray log {event.get('partition')} (topic id {event.get('topic_id')}) {done}: {event.get('reason')}"


def _topic_id_mismatch(event: Mapping[str, object]) -> str:
    return (
        f"cannot open {event.get('partition')} (INCONSISTENT_TOPIC_ID): its directory belongs to topic id "
        f"{event.get('actual')}, the metadata's is {event.get('expected')}"
    )


def _raft(event: Mapping[str, object]) -> str:
    name, epoch = event.get("event"), event.get("epoch")
    if name == "raft_prevote_started":
        return f"asks for pre-votes at epoch {epoch} after its {event.get('reason')} (leader {event.get('leader')})"
    if name in ("raft_prevote_rejected", "raft_prevote_granted"):
        verdict = "refuses" if name == "raft_prevote_rejected" else "grants"
        why = f": {event.get('reason')}" if "reason" in event else ""
        return f"{verdict} controller {event.get('prospective')}'s pre-vote at epoch {epoch}{why}"
    if name == "raft_prevote_lost":
        return f"lost its pre-vote at epoch {epoch} ({event.get('reason')}); follows {event.get('leader')} again"
    if name == "raft_election_started":
        return f"starts an election for epoch {epoch}"
    if name == "raft_leader_elected":
        return f"is elected KRaft leader of epoch {epoch}"
    return f"stops leading epoch {epoch}: {event.get('reason')}"


def _transaction(event: Mapping[str, object]) -> str:
    producer = f"producer {event.get('producer_id')} epoch {event.get('producer_epoch')}"
    if event.get("event") == "transaction_verification_failed":
        return (
            f"the coordinator answers {event.get('error')} for {event.get('partition')}: not in an ongoing "
            f"transaction of {event.get('transactional_id')} ({producer}); the batch is not appended"
        )
    return (
        f"transaction of {event.get('transactional_id')} ({producer}) complete: {event.get('result')}, markers in "
        f"{event.get('partitions')} partition(s)"
    )


def _generic(event: Mapping[str, object]) -> str:
    fields = {k: event[k] for k in QUOTED_FIELDS[2:] if k in event} | {
        k: v for k, v in event.items() if k in ("broker_id", "broker_epoch", "clean", "unclean")
    }
    return f"{event.get('event')} {json.dumps(fields, default=str)}"


_SENTENCES = {
    "alter_partition_rejected": _rejected,
    "alter_partition_accepted": _accepted,
    "leader_elected": _elected,
    "partition_changed": _changed,
    "broker_registered": _registered,
    "fault_injected": _fault,
    "stray_partition_deleted": _stray,
    "stray_partition_kept": _stray,
    "partition_topic_id_mismatch": _topic_id_mismatch,
    "transaction_completed": _transaction,
    "transaction_verification_failed": _transaction,
    **dict.fromkeys(
        (
            "raft_prevote_started",
            "raft_prevote_rejected",
            "raft_prevote_granted",
            "raft_prevote_lost",
            "raft_election_started",
            "raft_leader_elected",
            "raft_resigned",
        ),
        _raft,
    ),  # fmt: skip
}
