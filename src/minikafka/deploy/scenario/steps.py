"""The step language: each method is one step of a scenario, done against the run's cluster and recorded with the
sentence saying what the protocol should do, what it did, and the events that decided it.

A wait never sleeps blindly: it polls a condition until its deadline, and a deadline passing ends the scenario
(`StepFailed`). `expect=` takes a sentence, or an `Expect(guarded=..., unguarded=...)` pair when the protocol's
behaviour depends on the guard.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from minikafka.client.admin import AdminClient, PartitionDescription
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.event_log import utc_timestamp
from minikafka.deploy.faults import Faults
from minikafka.deploy.local_cluster import Cluster, is_alive
from minikafka.deploy.scenario import clients
from minikafka.deploy.scenario.events import find_events, query, quote
from minikafka.deploy.scenario.model import CHECK, PROMISE, STEP, Evidence, Expect, StepRecord, Tally

T = TypeVar("T")
Expectation = str | Expect


class StepFailed(Exception):
    """A step could not complete (a deadline passed, a client failed): the scenario stops there."""


def poll(probe: Callable[[], T | None], deadline_s: float, interval_s: float = 0.05) -> T | None:
    """`probe`'s first truthy value before the deadline (errors count as not yet: the cluster is converging)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            value = probe()
            if value:
                return value
        except Exception:  # noqa: BLE001 - a node restarting or a leader moving: poll again
            pass
        if time.monotonic() >= deadline:
            return None
        time.sleep(interval_s)


def leader_and_isr(p: PartitionDescription) -> str:
    return f"leader {p.leader}, ISR {p.isr}"


def leader_isr_and_elr(p: PartitionDescription) -> str:
    return f"leader {p.leader}, ISR {p.isr}, ELR {p.elr}"


class Steps:
    """The step API a scenario's `run(s)` calls, one line per step."""

    def __init__(self, cluster: Cluster, guarded: bool, guard_value: str, loop: clients.ClientLoop) -> None:
        self.cluster = cluster
        self.guarded = guarded
        self.guard_value = guard_value  # the guard's value for this run (e.g. a client setting the steps use)
        self.loop = loop
        self.admin = AdminClient(
            cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=5, tls=cluster.admin_tls
        )
        self.faults = Faults(cluster)
        self.records: list[StepRecord] = []
        self.tallies: list[Tally] = []
        self.produced: dict[str, list[tuple[clients.AckedWrite, str]]] = {}
        self.last_fault_ts = utc_timestamp()
        self._producer: clients.RunningProducer | None = None
        # The last description of each topic's partition 0, quoted when a wait on it times out.
        self._described: dict[str, PartitionDescription] = {}

    # ---- recording ----

    def record(
        self, action: str, expect: Expectation, observed: str, ok: bool = True, evidence: Sequence[Evidence] = (),
        kind: str = STEP,
    ) -> None:  # fmt: skip
        forks = isinstance(expect, Expect)
        expected = expect.for_mode(self.guarded) if isinstance(expect, Expect) else expect
        self.records.append(
            StepRecord(len(self.records) + 1, action, expected, observed, ok, tuple(evidence), kind, forks)
        )

    def _fail(self, action: str, expect: Expectation, why: str) -> StepFailed:
        self.record(action, expect, why, ok=False)
        return StepFailed(f"step {len(self.records)} ({action}): {why}")

    def _fault(self, action: str, expect: Expectation, do: Callable[[], object]) -> None:
        self.last_fault_ts = utc_timestamp()
        try:
            do()
        except Exception as error:  # noqa: BLE001 - reported as the step's failure, in one line
            raise self._fail(action, expect, f"{type(error).__name__}: {error}") from None
        self.record(action, expect, "done")

    # ---- the cluster's state ----

    def partition(self, topic: str) -> PartitionDescription:
        self._described[topic] = self.admin.describe_topics([topic])[0].partitions[0]
        return self._described[topic]

    def _last_described(self, topic: str, text: Callable[[PartitionDescription], str]) -> Callable[[], str]:
        return lambda: f"last seen: {text(self._described[topic])}" if topic in self._described else "never described"

    def partition_if(
        self, topic: str, condition: Callable[[PartitionDescription], bool]
    ) -> PartitionDescription | None:
        """Partition 0 of `topic` when `condition` holds of it, else None: a `wait_for` probe."""
        partition = self.partition(topic)
        return partition if condition(partition) else None

    def broker_epoch(self, broker_id: int) -> int:
        return {b.broker_id: b.broker_epoch for b in self.admin.describe_cluster().brokers}[broker_id]

    def fenced(self, broker_id: int) -> bool:
        return {b.broker_id: b.fenced for b in self.admin.describe_cluster().brokers}[broker_id]

    # ---- topics ----

    def create_topic(
        self, topic: str, replicas: list[list[int]], expect: Expectation, configs: dict[str, str] | None = None
    ) -> None:
        action = f"create topic {topic} with replicas {replicas}" + (f" and {configs}" if configs else "")
        observed = "created"
        try:
            self.admin.create_topic(topic, assignment=replicas, configs=configs or {})
        except KafkaError as error:
            if error.code != ErrorCode.TOPIC_ALREADY_EXISTS or not self._has_assignment(topic, replicas):
                raise self._fail(action, expect, f"{type(error).__name__}: {error}") from None
            observed = "created (an attempt whose answer was lost committed it: the retry found it with these replicas)"
        except Exception as error:  # noqa: BLE001
            raise self._fail(action, expect, f"{type(error).__name__}: {error}") from None
        # CreateTopics answers once the controller committed the topic, and brokers learn it a moment later: the
        # next step may go to any of them (produce_to sends straight to one broker, with no metadata wait).
        if poll(lambda: self._leader_known_on_running_brokers(topic), 30) is None:
            raise self._fail(action, expect, "created, but the running brokers did not all learn a leader in 30 s")
        self.record(action, expect, observed)

    def _has_assignment(self, topic: str, replicas: list[list[int]]) -> bool:
        """Whether `topic` exists with exactly these replicas. A run's topic names are its own, so such a topic was
        made by this run's create: a controller that loses leadership answers NOT_CONTROLLER for a record the new
        leader may still commit, and the client's retry then meets it (as Kafka's admin client would)."""
        # The brokers learn a committed topic a moment after the controller: ask until one describes it.
        described = poll(lambda: self.admin.describe_topics([topic])[0].partitions, 30)
        return sorted((p.partition, p.replicas) for p in described or []) == list(enumerate(replicas))

    def _leader_known_on_running_brokers(self, topic: str) -> bool:
        running = [spec for spec in self.cluster.brokers if is_alive(self.cluster.pids.get(spec.node_id))]
        return all(self.admin.ready_topic(topic, servers=[spec.address]) for spec in running)

    def delete_topic(self, topic: str, expect: Expectation) -> str:
        """Delete the topic; its id, once the removal is committed."""
        action = f"delete topic {topic}"
        try:
            topic_id = self.admin.delete_topic(topic)
        except Exception as error:  # noqa: BLE001
            raise self._fail(action, expect, f"{type(error).__name__}: {error}") from None
        self.produced.pop(topic, None)  # its acknowledged writes went with it: a final read must not expect them
        self.record(action, expect, f"deleted (topic id {topic_id})")
        return topic_id

    def reassign(self, topic: str, replicas: list[int], expect: Expectation, deadline_s: float = 30) -> None:
        """Move partition 0 to `replicas` and wait until the reassignment completes (replicas and ISR cover the
        target, and none is in progress)."""
        action = f"reassign {topic}-0 to replicas {replicas}"
        try:
            results = self.admin.alter_partition_reassignments([(topic, 0, replicas)])
        except Exception as error:  # noqa: BLE001
            raise self._fail(action, expect, f"{type(error).__name__}: {error}") from None
        refused = [f"{code.name}: {message}" for _, _, code, message in results if code is not ErrorCode.NONE]
        if refused:
            raise self._fail(action, expect, refused[0])

        def completed() -> PartitionDescription | None:
            p = self.partition(topic)
            done = p.replicas == replicas and (topic, 0) not in self.admin.list_partition_reassignments()
            return p if done else None

        found = poll(completed, deadline_s)
        if found is None:
            raise self._fail(action, expect, f"not completed within its deadline of {deadline_s:g} s")
        self.record(action, expect, f"completed: replicas {found.replicas}, leader {found.leader}, ISR {found.isr}")

    # ---- waiting ----

    def wait_for(
        self, action: str, probe: Callable[[], T | None], expect: Expectation, deadline_s: float = 30,
        observed: Callable[[T], str] = str, last_seen: Callable[[], str] | None = None,
    ) -> T:  # fmt: skip
        value = poll(probe, deadline_s)
        if not value:
            seen = f" ({last_seen()})" if last_seen is not None else ""
            raise self._fail(action, expect, f"not within its deadline of {deadline_s:g} s{seen}")
        self.record(action, expect, observed(value))
        return value

    def wait_isr(self, topic: str, isr: list[int], expect: Expectation, deadline_s: float = 30) -> PartitionDescription:
        return self.wait_for(
            f"wait until the ISR of {topic}-0 is {isr}",
            lambda: self.partition_if(topic, lambda p: p.isr == isr),
            expect,
            deadline_s,
            leader_isr_and_elr,
            self._last_described(topic, leader_isr_and_elr),
        )

    def wait_isr_size(self, topic: str, size: int, expect: Expectation, deadline_s: float = 60) -> PartitionDescription:
        """Wait until the partition has a leader and `size` replicas in its ISR, whichever they are (after a fault,
        when who leads is what the scenario checks next)."""
        return self.wait_for(
            f"wait until {topic}-0 has a leader and {size} replicas in its ISR",
            lambda: self.partition_if(topic, lambda p: p.leader >= 0 and len(p.isr) == size),
            expect,
            deadline_s,
            leader_and_isr,
            self._last_described(topic, leader_and_isr),
        )

    def wait_event(
        self, names: str | tuple[str, ...], expect: Expectation, node: str = "", deadline_s: float = 30,
        since: str | None = None, **where: object,
    ) -> dict:  # fmt: skip
        """Wait for an event in the run's logs (by default one logged since the last fault) and quote it."""
        q = query(names, node, self.last_fault_ts if since is None else since, **where)
        label = " or ".join(q.names)
        found = poll(lambda: find_events(self.cluster.run_dir, q), deadline_s)
        action = f"wait for {label}" + (f" on {node}" if node else "")
        if not found:
            raise self._fail(action, expect, f"no such event within its deadline of {deadline_s:g} s")
        source, event = found[0]
        evidence = quote(source, event)
        self.record(action, expect, evidence.sentence, evidence=[evidence])
        return event

    def quote_events(
        self, names: str | tuple[str, ...], node: str = "", since: str | None = None, limit: int = 3, **where: object
    ) -> list[dict]:
        """Add the matching events (the first `limit`) to the last step's evidence, as the decisive ones."""
        q = query(names, node, self.last_fault_ts if since is None else since, **where)
        found = find_events(self.cluster.run_dir, q)[:limit]
        if found and self.records:
            last = self.records[-1]
            quoted = tuple(quote(source, event) for source, event in found)
            self.records[-1] = dataclasses.replace(last, evidence=last.evidence + quoted)
        return [event for _, event in found]

    def events(self, names: str | tuple[str, ...], node: str = "", since: str = "", **where: object) -> list[dict]:
        """Matching events from the run's logs so far, oldest first (for a scenario's own conditions)."""
        return [event for _, event in find_events(self.cluster.run_dir, query(names, node, since, **where))]

    def wait_leader_change(self, topic: str, away_from: int, expect: Expectation, deadline_s: float = 30) -> dict:
        """Wait until the controller commits a leader of `topic`-0 other than `away_from` (and not -1) after the
        last fault; quote that decision."""
        since = self.last_fault_ts

        def elected() -> dict | None:
            found = self.events("leader_elected", "controller", since, topic=topic)
            return next((e for e in found if e.get("leader") not in (away_from, -1, None)), None)

        event = poll(elected, deadline_s)
        action = f"wait until the controller elects a leader of {topic}-0 other than broker-{away_from}"
        if event is None:
            raise self._fail(action, expect, f"no such election within its deadline of {deadline_s:g} s")
        evidence = quote(str(event.get("node")), event)
        self.record(action, expect, evidence.sentence, evidence=[evidence])
        return event

    def promise_within(
        self, action: str, probe: Callable[[], T | None], expect: Expectation, deadline_s: float,
        observed: Callable[[T | None], str] = str,
    ) -> T | None:  # fmt: skip
        """A promise with a deadline: `probe` must hold before it passes. Missing it breaks the verdict (it is not
        an error: the run goes on to show what happened instead)."""
        value = poll(probe, deadline_s)
        self.record(action, expect, observed(value), ok=bool(value), kind=PROMISE)
        return value

    def check(self, action: str, holds: bool, expect: Expectation, observed: str) -> bool:
        """What happened against what the scenario predicts for this configuration; a miss is recorded (the run
        was not as predicted) and the run goes on."""
        self.record(action, expect, observed, ok=holds, kind=CHECK)
        return holds

    def promise(self, action: str, holds: bool, expect: Expectation, observed: str) -> bool:
        """One of the protocol's promises (beside "nothing acknowledged is lost", which every run checks): false
        breaks the run's verdict."""
        self.record(action, expect, observed, ok=holds, kind=PROMISE)
        return holds

    # ---- faults ----

    def kill(self, node: int, expect: Expectation) -> None:
        self._fault(f"SIGKILL {self.cluster.node(node).label}", expect, lambda: self.faults.kill(node))

    def stop(self, node: int, expect: Expectation) -> None:
        self._fault(f"stop {self.cluster.node(node).label} (SIGTERM)", expect, lambda: self.faults.stop(node))

    def start(self, node: int, expect: Expectation) -> None:
        self._fault(f"start {self.cluster.node(node).label}", expect, lambda: self.faults.start(node))

    def pause(self, node: int, expect: Expectation) -> None:
        self._fault(f"pause {self.cluster.node(node).label} (SIGSTOP)", expect, lambda: self.faults.pause(node))

    def resume(self, node: int, expect: Expectation) -> None:
        self._fault(f"resume {self.cluster.node(node).label} (SIGCONT)", expect, lambda: self.faults.resume(node))

    def reboot(self, node: int, expect: Expectation, wipe_disk: bool = False, lose_unflushed: bool = False) -> None:
        how = " with its disk wiped" if wipe_disk else " losing its unflushed data" if lose_unflushed else ""
        self._fault(
            f"reboot {self.cluster.node(node).label}{how}", expect,
            lambda: self.faults.reboot(node, lose_unflushed=lose_unflushed, wipe_disk=wipe_disk),
        )  # fmt: skip

    def isolate(self, node: int, expect: Expectation) -> None:
        self._fault(
            f"isolate {self.cluster.node(node).label} from every node", expect, lambda: self.faults.isolate(node)
        )

    def cut(self, first: set[int], second: set[int], expect: Expectation) -> None:
        self._fault(
            f"cut {sorted(first)} from {sorted(second)}", expect,
            lambda: self.faults.partition(frozenset(first), frozenset(second)),
        )  # fmt: skip

    def heal(self, expect: Expectation) -> None:
        self._fault("heal every network cut", expect, self.faults.heal)

    def hold_alter_partition(self, broker: int, expect: Expectation) -> None:
        self._fault(
            f"hold broker-{broker}'s AlterPartition requests", expect, lambda: self.faults.hold_alter_partition(broker)
        )

    def release_alter_partition(self, broker: int, expect: Expectation, keep_holding: bool = False) -> None:
        more = " (and hold the ones it proposes next)" if keep_holding else ""
        action = f"release broker-{broker}'s held AlterPartition requests{more}"
        self.last_fault_ts = utc_timestamp()
        try:
            released = self.faults.release_alter_partition(broker, keep_holding=keep_holding)
        except Exception as error:  # noqa: BLE001
            raise self._fail(action, expect, f"{type(error).__name__}: {error}") from None
        if released < 1:
            raise self._fail(action, expect, "no request was held")
        self.record(action, expect, f"{released} request(s) sent to the controller")

    # ---- clients ----

    def produce(
        self, topic: str, count: int, expect: Expectation, acks: int = -1, one_batch_per_record: bool = False
    ) -> list[clients.AckedWrite]:
        action = f"produce {count} records to {topic}-0 with acks={clients.acks_name(acks)}"
        try:
            acked = self.loop.run(
                # Values name their step (s12-00000): two steps' writes never look like one write sent twice.
                clients.produce_acked(
                    self.cluster.bootstrap_servers,
                    topic,
                    count,
                    acks,
                    f"s{len(self.records) + 1}",
                    one_batch_per_record,
                )
            )
        except Exception as error:  # noqa: BLE001
            raise self._fail(action, expect, f"{type(error).__name__}: {error}") from None
        self.produced.setdefault(topic, []).extend((w, clients.acks_name(acks)) for w in acked)
        self.record(action, expect, f"{len(acked)} acknowledged" + (f", offsets {acked[0].offset}..{acked[-1].offset}"
                                                                     if acked else ""))  # fmt: skip
        return acked

    def produce_to(self, broker: int, topic: str, count: int, expect: Expectation, acks: int, prefix: str) -> int:
        """Single-record Produce calls straight to one broker (no client retries, no metadata): how many it
        acknowledged."""
        acked = clients.produce_many(self.cluster.node(broker).address, prefix, count, acks, topic)
        self.produced.setdefault(topic, []).extend((w, clients.acks_name(acks)) for w in acked)
        self.record(
            f"send {count} records with acks={clients.acks_name(acks)} straight to broker-{broker}", expect,
            f"{len(acked)} of {count} acknowledged",
        )  # fmt: skip
        return len(acked)

    def start_producer(self, topic: str, expect: Expectation) -> clients.RunningProducer:
        self._producer = clients.RunningProducer(self.loop, self.cluster.bootstrap_servers, topic)
        self.record(f"start an acks=all producer on {topic}-0", expect, "running")
        return self._producer

    def stop_producer(self, expect: Expectation) -> None:
        producer = self._producer
        assert producer is not None, "stop_producer without start_producer"
        producer.stop()
        self.produced.setdefault(producer.topic, []).extend((w, "all") for w in producer.acked)
        refused = sorted(set(producer.failed))
        self.record(
            "stop the producer", expect,
            f"{len(producer.acked)} acknowledged, {len(producer.failed)} refused" + (f" ({', '.join(refused)})"
                                                                                    if refused else ""),
        )  # fmt: skip

    def final_read(self, topic: str, expect: Expectation) -> Tally:
        """Read partition 0 from the beginning; count the acknowledged writes it does not hold, per acks."""
        produced = self.produced.get(topic, [])
        ends: list[dict] = []
        try:
            read = self.loop.run(clients.consume_partition(self.cluster.bootstrap_servers, topic, None, ends))
        except Exception as error:  # noqa: BLE001
            raise self._fail(f"read {topic}-0 back", expect, f"{type(error).__name__}: {error}") from None
        clients.write_histories(self.cluster.run_dir, topic, produced, read, ends)
        for acks in sorted({a for _, a in produced}):
            writes = [w for w, a in produced if a == acks]
            lost = sorted(w.offset for w in writes if read.get(w.offset) != w.value)
            self.tallies.append(
                Tally(topic, acks, len(writes), len(lost), lost[0] if lost else None, lost[-1] if lost else None)
            )
        mine = [t for t in self.tallies if t.topic == topic]
        self.record(
            f"read {topic}-0 back from the beginning", expect,
            f"{len(read)} records read; " + "; ".join(_tally_text(t) for t in mine),
            ok=True,
        )  # fmt: skip
        return mine[-1] if mine else Tally(topic, "all", 0, 0)


def _tally_text(tally: Tally) -> str:
    span = f" (offsets {tally.first_lost}..{tally.last_lost})" if tally.lost else ""
    return f"acks={tally.acks}: {tally.acknowledged} acknowledged, {tally.lost} lost{span}"
