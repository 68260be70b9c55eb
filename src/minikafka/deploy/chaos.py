"""`minikafka chaos`: a seeded acks=all workload on a local cluster while faults hit it, then the analysis.

Producers write unique values with their histories, a consumer reads live, the fault plan (chaos_schedule.py)
runs step by step, each step healed and followed by full ISRs before the next; at the end everything is healed,
consumed from the beginning, the cluster is stopped and `analyze` runs.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from minikafka.client.admin import AdminClient
from minikafka.client.consumer import READ_COMMITTED, ConsumerConfig
from minikafka.common.certificates import ca_certificate_path
from minikafka.common.cli_support import run_event_loop
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.tls import TlsFiles
from minikafka.deploy import cluster_commands
from minikafka.deploy.chaos_principals import (
    ADMIN,
    DENIED_RATE_PER_S,
    ChaosResources,
    Principal,
    acl_settings,
    denied_producers,
    grant,
    writers,
)
from minikafka.deploy.chaos_schedule import (
    CHAOS_TIMING,
    CONTROLLER_FLAPS,
    ChaosPlanConfig,
    FaultStep,
    PlanTiming,
    overlapping_groups,
    plan_faults,
    reordered,
)
from minikafka.deploy.compacted_workload import (
    CLEANER_SETTINGS,
    COMPACTED_TOPIC_CONFIGS,
    cleaner_totals,
    latest_values_lost,
    log_bytes,
)
from minikafka.deploy.faults import CONSUMER_PROTOCOL_SETTINGS, FAULT_RUN_SETTINGS, Faults, record_partition_fault
from minikafka.deploy.group_workload import GROUP, GroupWorkload
from minikafka.deploy.local_cluster import Cluster, ClusterError, is_alive
from minikafka.deploy.network import inside, namespace_name, read_cuts
from minikafka.deploy.transactional_workload import TXN_TOPIC, TransactionCounts, run_transactional_producer
from minikafka.deploy.workload import (
    ProduceCounts,
    ProducerPlan,
    consume_to_file,
    denied_counts,
    lost_acknowledged,
    produce_with_history,
    wait_for_full_isrs,
)
from minikafka.storage.meta_properties import read_meta_properties

T = TypeVar("T")
TOPIC = "chaos"
VOTER_CHANGE_TIMEOUT_S = 60.0


def _changed(call: Callable[[], None], done_error: ErrorCode, made: Callable[[], bool]) -> bool | None:
    """True once a voter change succeeded; None while the leader asks to retry (REQUEST_TIMED_OUT, no leader). A
    change asked again after its answer was lost to a leader change is refused with `done_error` once the first one
    committed: it counts as made when the voter set shows it (`made`), as an operator reads it with describe."""
    try:
        call()
    except KafkaError as error:
        if error.code in (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_CONTROLLER):
            return None
        if error.code is done_error and made():
            return True
        raise ClusterError(f"voter change refused: {error}") from None
    return True


def _retry(probe: Callable[[], T | None], what: str) -> T:
    deadline = time.monotonic() + VOTER_CHANGE_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            found = probe()
        except KafkaError:
            found = None
        if found:
            return found
        time.sleep(0.2)
    raise ClusterError(f"{what}: not within {VOTER_CHANGE_TIMEOUT_S:.0f} s")


RECOVERY_TIMEOUT_S = 120.0
# The producers stop, then the final read: at most default.api.timeout.ms waiting for leaders, plus the reading.
FINAL_READ_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class ChaosOptions:
    duration_s: float
    kinds: tuple[str, ...]
    seed: int = 0
    brokers: int = 3
    controllers: int = 3
    partitions: int = 3
    producers: int = 2
    rate_per_producer: float = 200.0
    group_consumers: int = 0  # members of one consumer group, killed and restarted at random
    group_protocol: str = "classic"  # their group.protocol: classic or consumer (KIP-848)
    transactional_producers: int = 0  # each writes transactions over every partition of TXN_TOPIC
    analyze: bool = True
    # The StandardAuthorizer on, each producer its own SASL principal (chaos_principals.py), and this many more
    # producers whose writes the ACLs refuse
    acls: bool = False
    denied_producers: int = 0
    # The chaos topic compacted (compacted_workload.py), its producers overwriting this many keys; 0: no keys
    compacted_keys: int = 0
    overlap: float = 0.0  # the plan's probability that a fault strikes while the one before is active
    max_at_once: int = 2  # with `overlap`: how many faults may be active at once
    timing: PlanTiming = CHAOS_TIMING  # the plan's gaps and longest downtime

    def principals(self) -> list[Principal]:
        return writers(self.producers) + denied_producers(self.denied_producers) if self.acls else []


@dataclass
class ChaosSummary:
    run_dir: Path
    seed: int
    faults: list[dict[str, Any]] = field(default_factory=list)
    acknowledged: int = 0
    failed: int = 0
    consumed: int = 0
    lost: int = 0
    group: dict[str, int] | None = None  # the group consumers' GroupCounts
    transactions: dict[str, int] | None = None  # the transactional producers' TransactionCounts, summed
    denied: dict[str, dict[str, Any]] | None = None  # chaos --acls: each denied principal's DeniedCounts
    compaction: dict[str, int] | None = None  # chaos --compacted-keys: the CompactionCounts
    analysis: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        group_ok = self.group is None or self.group["unconsumed"] == 0
        denied_ok = all(d["acknowledged"] == 0 and d["visible"] == 0 for d in (self.denied or {}).values())
        return self.lost == 0 and group_ok and denied_ok and (self.analysis is None or bool(self.analysis["passed"]))

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["run_dir"] = str(self.run_dir)
        document["passed"] = self.passed
        if self.analysis is not None:
            document["analysis"] = {
                "verdict": self.analysis["verdict"],
                "passed": self.analysis["passed"],
                "final_read": self.analysis["final_read"],
                "report": self.analysis["report"],
                "invariants": [
                    {"name": v["name"], "verdict": v["verdict"], "violations": v["violations"]}
                    for v in self.analysis["invariants"]
                ],
                "failover": {k: v for k, v in self.analysis["failover"].items() if not isinstance(v, list)},
                "analysis_seconds": self.analysis["analysis_seconds"],
            }
        return document


class Workload:
    """The producers and the live consumer, on their own event loop in a thread, until `stop()`; then the final
    read of everything, on the same loop (a second event loop in one process gets grpc.aio's completions for the
    first one's channels after it closed: "Event loop is closed" tracebacks)."""

    def __init__(self, cluster: Cluster, options: ChaosOptions) -> None:
        history = cluster.run_dir / "history"
        self.tls = TlsFiles(ca_certificate_path(cluster.certs_dir)) if options.acls else None
        self.sasl = ADMIN if options.acls else None  # the readers: a super user
        keys = options.compacted_keys or None
        self.plans = [  # the acks=all producers (with --acls, the writers)
            ProducerPlan(
                TOPIC,
                f"p{n}",
                history / f"produce-p{n}.jsonl",
                rate_per_s=options.rate_per_producer,
                key_count=keys,
                first_key=n * options.compacted_keys // options.producers,
            )  # fmt: skip
            for n in range(options.producers)
        ]
        self.denied_plans: list[ProducerPlan] = []
        if options.acls:
            self.plans = [self._principal_plan(p, history, options) for p in options.principals() if not p.denied]
            self.denied_plans = [self._principal_plan(p, history, options) for p in options.principals() if p.denied]
        self.live = history / "consume-live.jsonl"
        self.final = history / "consume-final.jsonl"
        self.partitions = list(range(options.partitions))
        self.txn_histories = [history / f"produce-txn-t{n}.jsonl" for n in range(options.transactional_producers)]
        self.txn_final = history / "consume-txn-final.jsonl"
        self.txn_counts = TransactionCounts()
        self.kafka_bootstrap = cluster.kafka_bootstrap_servers.split(",")
        self.consumed = 0
        self.bootstrap = cluster.bootstrap_servers
        self._stop = threading.Event()
        self.counts: list[ProduceCounts] = []
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="chaos-workload", daemon=True)

    def _principal_plan(self, principal: Principal, history: Path, options: ChaosOptions) -> ProducerPlan:
        """A producer logged in as `principal`: a writer at the run's rate, or a denied one at DENIED_RATE_PER_S."""
        rate = DENIED_RATE_PER_S if principal.denied else options.rate_per_producer
        return ProducerPlan(
            TOPIC, principal.name, history / f"produce-{principal.name}.jsonl", rate_per_s=rate, tls=self.tls,
            sasl=principal.login, refused_by_acls=principal.denied, key_count=options.compacted_keys or None,
        )  # fmt: skip

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float) -> None:
        self._stop.set()
        self._thread.join(timeout_s)
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        async def main() -> None:
            producers = [
                produce_with_history(self.bootstrap, plan, self._stop) for plan in self.plans + self.denied_plans
            ]
            transactional = [
                run_transactional_producer(self.kafka_bootstrap, f"t{n}", self.partitions, path, self._stop)
                for n, path in enumerate(self.txn_histories)
            ]
            _, counts, txn_counts = await asyncio.gather(
                consume_to_file(self.bootstrap, TOPIC, self.live, self._stop, tls=self.tls, sasl=self.sasl),
                asyncio.gather(*producers),
                asyncio.gather(*transactional),
            )
            self.counts = list(counts)[: len(self.plans)]
            for one in txn_counts:
                self.txn_counts.add(one)
            self.consumed = await consume_to_file(self.bootstrap, TOPIC, self.final, tls=self.tls, sasl=self.sasl)
            if self.txn_histories:
                committed = ConsumerConfig(isolation_level=READ_COMMITTED)
                await consume_to_file(
                    self.bootstrap, TXN_TOPIC, self.txn_final, config=committed, tls=self.tls, sasl=self.sasl
                )

        try:
            run_event_loop(main())
        except BaseException as error:  # reported to the caller by stop()
            self.error = error


class FaultRunner:
    """Executes fault steps against the cluster and records what was done."""

    def __init__(self, cluster: Cluster, admin: AdminClient, log: Callable[[str], None]) -> None:
        self.cluster = cluster
        self.faults = Faults(cluster)
        self.admin = admin
        self.log = log
        self.done: list[dict[str, Any]] = []
        self.corrupted: dict[int, int] = {}  # partition -> the one broker whose replica of it was corrupted

    def run(self, steps: tuple[FaultStep, ...], started: float) -> None:
        """A step, and those that strike while it is active (each in a thread, at its offset from the first's
        start), then full ISRs awaited, as one."""
        first, *joining = steps
        records: list[dict[str, Any]] = []
        failures: list[BaseException] = []
        begun = time.monotonic()
        threads = []
        for step in joining:
            at = begun + step.at_s - first.at_s
            threads.append(threading.Thread(target=self._joined, args=(step, started, records, at, failures)))
        for thread in threads:
            thread.start()
        try:
            self._strike(first, started, records)
        finally:
            for thread in threads:
                thread.join()
        if failures:
            raise failures[0]
        struck = sorted(records, key=lambda record: float(record["at_s"]))
        if all("error" in record for record in struck):
            self.done.extend(struck)
            return
        label = " + ".join(f"{step.kind} {self._describe(step)}" for step in steps)
        recovered = wait_for_full_isrs(self.admin, TOPIC, RECOVERY_TIMEOUT_S)
        if not recovered:
            self.log(f"           ISRs not full {RECOVERY_TIMEOUT_S:.0f}s after {label}")
        for record in struck:
            if "error" not in record:
                recovery_s = time.monotonic() - started - float(record["started_s"])
                record.update(recovered=recovered, recovery_s=round(recovery_s, 3))
        self.done.extend(struck)

    def _joined(
        self, step: FaultStep, started: float, records: list[dict[str, Any]], at: float, failures: list[BaseException]
    ) -> None:
        try:
            self._strike(step, started, records, at)
        except BaseException as error:  # raised again by the runner's thread, as its own step's failure would be
            failures.append(error)

    def _strike(self, step: FaultStep, started: float, records: list[dict[str, Any]], at: float = 0.0) -> None:
        """One step from its strike (not before the monotonic time `at`) to its healing, recorded in `records`."""
        if (wait := at - time.monotonic()) > 0:
            time.sleep(wait)  # the plan's offset from the step it joins
        elapsed = time.monotonic() - started
        label = self._describe(step)
        joins = " (while the step before is active)" if step.overlaps else ""
        self.log(f"[{elapsed:7.1f}s] {step.kind} {label}" + (f" for {step.down_s:.1f}s" if step.down_s else "") + joins)
        try:
            self._inject(step)
        except ClusterError as error:
            self.log(f"           {step.kind} {label} failed: {error}")
            records.append({**asdict(step), "started_s": round(elapsed, 3), "error": str(error)})
            return
        records.append({**asdict(step), "started_s": round(elapsed, 3)})

    def _inject(self, step: FaultStep) -> None:
        match step.kind:
            case "kill" | "controller-kill":
                self.faults.kill(step.target)
                time.sleep(step.down_s)  # the planned downtime, not a synchronisation
                self.faults.start(step.target)
            case "pause":
                self.faults.pause(step.target)
                time.sleep(step.down_s)
                self.faults.resume(step.target)
            case "stop":
                self.faults.stop(step.target)
                time.sleep(step.down_s)  # the planned downtime, not a synchronisation
                self.faults.start(step.target)
            case "hold-alter-partition":
                self.faults.hold_alter_partition(step.target)
                time.sleep(step.down_s)  # the planned hold, not a synchronisation
                self.faults.release_alter_partition(step.target)
            case "reboot":
                self.faults.reboot(step.target)
            case "lose-unflushed":
                self.faults.reboot(step.target, lose_unflushed=True)
            case "wipe-disk":
                self.faults.reboot(step.target, wipe_disk=True)
            case "controller-wipe":
                self._wipe_controller(step.target)
            case "controller-flap":
                for _ in range(CONTROLLER_FLAPS):
                    self.faults.isolate(step.target)
                    self._heal_after(step.down_s / CONTROLLER_FLAPS)
            case "partition" | "broker-controller" | "one-way":
                first, second = step.groups  # type: ignore[misc]
                self.faults.partition(frozenset(first), frozenset(second), one_way=step.kind == "one-way")
                self._heal_after(step.down_s)
            case "isolate-leader" | "isolate-controller":
                self.faults.isolate(self._current_target(step))
                self._heal_after(step.down_s)
            case "disk-full" | "disk-error":
                (self.faults.disk_full if step.kind == "disk-full" else self.faults.disk_error)(step.target)
                time.sleep(step.down_s)  # the planned time on a failing disk (it may exit first); not a sync
                self.faults.reboot(step.target)  # a new process on a repaired disk: the injection was in the old one
            case "corrupt":
                self._corrupt(step.target)
            case "reassign":
                self._reassign(step)
            case _:
                raise ClusterError(f"unknown fault kind {step.kind}")

    def _corrupt(self, broker: int) -> None:
        """Flip a byte in `broker`'s replica of a partition no other broker's replica of which was corrupted (the
        same broker's again when every partition has its corrupted replica elsewhere: then nothing is done)."""
        partitions = self.admin.describe_topics([TOPIC])[0].partitions
        free = [p.partition for p in partitions if self.corrupted.get(p.partition, broker) == broker]
        hosted = [p for p in free if broker in next(q.replicas for q in partitions if q.partition == p)]
        if not hosted:
            raise ClusterError(f"broker {broker} holds no partition whose corruption would be the only one")
        partition = hosted[len(self.done) % len(hosted)]
        self.faults.corrupt(broker, f"{TOPIC}-{partition}")
        self.corrupted[partition] = broker

    def _reassign(self, step: FaultStep) -> None:
        """AlterPartitionReassignments (what `kafka-reassign-partitions --execute` sends) of partition `target`
        modulo the partitions to its replicas in the step's order; waits until it completed."""
        try:
            partitions = self.admin.describe_topics([TOPIC])[0].partitions
            found = partitions[step.target % len(partitions)]
            replicas = list(reordered(found.replicas, step.replicas))
            label = f"{TOPIC}-{found.partition}"
            record_partition_fault(
                self.cluster, "reassign", label, original_replicas=list(found.replicas), target_replicas=replicas
            )
            refused = [
                f"{code.name}: {message}"
                for _, _, code, message in self.admin.alter_partition_reassignments(
                    [(TOPIC, found.partition, replicas)]
                )
                if code is not ErrorCode.NONE
            ]
        except KafkaError as error:
            raise ClusterError(f"reassignment of a {TOPIC} partition failed: {error}") from None
        if refused:
            raise ClusterError(f"reassignment of {label} to {replicas} refused: {refused[0]}")

        def completed() -> bool:
            now = [p for p in self.admin.describe_topics([TOPIC])[0].partitions if p.partition == found.partition]
            in_progress = (TOPIC, found.partition) in self.admin.list_partition_reassignments()
            return bool(now) and now[0].replicas == replicas and not in_progress

        _retry(completed, f"reassignment of {label} to {replicas} completed")
        self.log(f"           {label}: replicas {list(found.replicas)} -> {replicas}")

    def _wipe_controller(self, controller: int) -> None:
        """Reboot `controller` with its disk wiped; in a dynamic quorum it comes back an observer in a new
        directory, and is removed under its old one and added under its new one, as an operator would."""
        voters = {v["id"]: v["directory_id"] for v in self.admin.describe_quorum()["voters"]}
        self.faults.reboot(controller, wipe_disk=True)
        old = voters.get(controller, "")
        if not self.cluster.dynamic_quorum or not old:
            return
        # The new directory as the node's own disk names it (as `kafka-metadata-quorum add-controller` reads it):
        # the leader still lists the directories of earlier wipes among its observers, and adding one of those
        # would name a voter no process runs, so the quorum could no longer commit without it.
        meta = read_meta_properties(self.cluster.node(controller).data_dir)
        directory = meta.directory_id if meta is not None else ""

        def fetching() -> bool:
            observers = self.admin.describe_quorum()["observers"]
            return any(o["id"] == controller and o["directory_id"] == directory for o in observers)

        _retry(fetching, f"controller {controller} fetching in its new directory {directory}")
        cluster_id = self.cluster.overrides.get("cluster.id", "minikafka")

        def voter_in(directory_id: str) -> bool:
            voters = self.admin.describe_quorum()["voters"]
            return any(v["id"] == controller and v["directory_id"] == directory_id for v in voters)

        def remove() -> None:
            self.admin.remove_raft_voter(controller, old, cluster_id)

        def add() -> None:
            self.admin.add_raft_voter(controller, directory, cluster_id)

        _retry(lambda: _changed(remove, ErrorCode.VOTER_NOT_FOUND, lambda: not voter_in(old)), "RemoveRaftVoter")
        _retry(lambda: _changed(add, ErrorCode.DUPLICATE_VOTER, lambda: voter_in(directory)), "AddRaftVoter")
        self.log(f"           controller {controller}: removed in directory {old}, added in {directory}")

    def _heal_after(self, down_s: float) -> None:
        time.sleep(down_s)  # the planned duration of the cut, not a synchronisation
        self.faults.heal()

    def _current_target(self, step: FaultStep) -> int:
        """The node an isolate-* step cuts: the leader of a partition, or the active controller, as they are now."""
        try:
            if step.kind == "isolate-controller":
                return int(self.admin.describe_quorum()["leader_id"])
            partitions = self.admin.describe_topics([TOPIC])[0].partitions
            return partitions[step.target % len(partitions)].leader
        except KafkaError as error:
            raise ClusterError(f"cannot find whom {step.kind} should cut: {error}") from None

    def _describe(self, step: FaultStep) -> str:
        if step.kind == "reassign":
            return f"a {TOPIC} partition's replicas in the order {list(step.replicas)}"
        if step.groups:
            first, second = step.groups
            arrow = "->" if step.kind == "one-way" else "<->"
            return f"{','.join(map(str, first))} {arrow} {','.join(map(str, second))}"
        if step.kind == "isolate-leader":
            return f"the leader of a {TOPIC} partition"
        if step.kind == "isolate-controller":
            return "the active controller"
        return self.cluster.node(step.target).label

    def heal_all(self) -> None:
        """Heal every cut and start every node that is not running (a fault that failed half-way)."""
        if read_cuts(self.cluster.run_dir) and any(is_alive(pid) for pid in self.cluster.pids.values()):
            self.log("           healing every network cut")
            self.faults.heal()
        for spec in self.cluster.nodes:
            if not is_alive(self.cluster.pids.get(spec.node_id)):
                self.log(f"           starting {spec.label} to heal the cluster")
                self.faults.start(spec.node_id)


def _run_plan(plan: list[FaultStep], runner: FaultRunner, started: float, duration_s: float) -> None:
    """Each fault at its planned time (with those that strike while it is active), until the run's duration is
    over; then every fault healed."""
    for steps in overlapping_groups(plan):
        wait = started + steps[0].at_s - time.monotonic()
        if wait > 0:
            time.sleep(wait)  # the plan's schedule
        if time.monotonic() - started >= duration_s:
            break
        runner.run(steps, started)
    remaining = started + duration_s - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)
    runner.heal_all()


def _keys_line(options: ChaosOptions) -> str:
    if not options.compacted_keys:
        return ""
    return f"topic {TOPIC} compacted, {options.compacted_keys} keys overwritten in turn; "


def _prepare(cluster: Cluster, options: ChaosOptions, log: Callable[[str], None]) -> AdminClient:
    """The admin client (with --acls, the super user on the brokers' SASL listener), the topics, and with --acls
    the ACLs, applied on every broker."""
    ca = TlsFiles(ca_certificate_path(cluster.certs_dir)) if options.acls else None
    admin = AdminClient(
        cluster.bootstrap_controllers, cluster.bootstrap_servers, timeout_s=10, tls=cluster.admin_tls,
        broker_tls=ca, broker_sasl=ADMIN if options.acls else None,
    )  # fmt: skip
    for topic in [TOPIC, *([TXN_TOPIC] if options.transactional_producers else [])]:
        compacted = COMPACTED_TOPIC_CONFIGS if options.compacted_keys and topic == TOPIC else {}
        admin.create_topic(topic, options.partitions, 3, {"min.insync.replicas": "2", **compacted})
        admin.wait_for_topic(topic, 30)
    if ca is not None:
        resources = ChaosResources(TOPIC, TXN_TOPIC, f"{TOPIC}-t", GROUP)
        created = grant(admin, cluster.bootstrap_servers, ca, options.principals(), resources)
        log(f"ACLs: {created} created for {len(options.principals())} principals and User:ANONYMOUS")
    return admin


def _log_figures(cluster: Cluster) -> dict[str, int]:
    """What the cleaners did to the chaos topic and what is left of it on disk, with the cluster stopped."""
    size, replicas = log_bytes(cluster.brokers, TOPIC)
    cleanings, before, after = cleaner_totals(cluster.run_dir, TOPIC)
    return {
        "log_bytes": size,
        "replicas": replicas,
        "cleanings": cleanings,
        "cleaned_bytes_before": before,
        "cleaned_bytes_after": after,
    }


def _count_workload(summary: ChaosSummary, workload: Workload, options: ChaosOptions) -> None:
    """The producers' and readers' counts into the summary, once the final reads are done."""
    summary.acknowledged = sum(c.acknowledged for c in workload.counts)
    summary.failed = sum(c.failed for c in workload.counts)
    summary.consumed = workload.consumed
    histories = [p.history for p in workload.plans]
    if options.compacted_keys:  # superseded records may be gone: the latest value of each key must not
        compaction = latest_values_lost(histories, workload.final)
        summary.compaction = asdict(compaction)
        summary.lost = compaction.lost_latest
    else:
        summary.lost = lost_acknowledged(histories, workload.final)
    if options.transactional_producers:
        summary.transactions = asdict(workload.txn_counts)
    if options.acls:
        summary.denied = {
            plan.principal or plan.name: asdict(denied_counts(plan.history, workload.final))
            for plan in workload.denied_plans
        }


def run_chaos(run_dir: Path, options: ChaosOptions, log: Callable[[str], None] = print) -> ChaosSummary:
    log(f"starting a {options.controllers}+{options.brokers} cluster in {run_dir} ...")
    # In the run's namespace (the command entered it first), the cluster is there too and the cuts are the kernel's.
    network = "netns" if inside(namespace_name(run_dir.resolve())) else "host"
    settings = {**FAULT_RUN_SETTINGS, **(CONSUMER_PROTOCOL_SETTINGS if options.group_protocol == "consumer" else {})}
    if options.acls:
        settings.update(acl_settings(options.principals()))
    if options.compacted_keys:
        settings.update(CLEANER_SETTINGS)
    cluster = cluster_commands.up(
        run_dir,
        options.controllers,
        options.brokers,
        settings,
        network=network,
        dynamic_quorum="controller-wipe" in options.kinds,  # a wiped voter is then removed and added again
    )
    summary = ChaosSummary(cluster.run_dir, options.seed)
    group: GroupWorkload | None = None
    try:
        admin = _prepare(cluster, options, log)
        plan = plan_faults(
            options.seed,
            options.kinds,
            ChaosPlanConfig(
                options.duration_s,
                [b.node_id for b in cluster.brokers],
                [c.node_id for c in cluster.controllers],
                timing=options.timing,
                overlap=options.overlap,
                max_at_once=options.max_at_once,
            ),
        )
        denied = (
            f"{options.denied_producers} denied producers at {DENIED_RATE_PER_S:.0f} records/s each, "
            if options.acls
            else ""
        )
        log(
            f"workload: {options.producers} acks=all producers at {options.rate_per_producer:.0f} records/s each, "
            f"{denied}a live consumer, {options.transactional_producers} transactional producers; "
            f"{_keys_line(options)}"
            f"{len(plan)} faults planned over {options.duration_s:.0f}s (seed {options.seed})"
        )
        workload = Workload(cluster, options)
        runner = FaultRunner(cluster, admin, log)
        started = time.monotonic()
        workload.start()
        if options.group_consumers:
            group = GroupWorkload(cluster, TOPIC, options.group_consumers, options.seed, options.group_protocol)
            group.start()
        _run_plan(plan, runner, started, options.duration_s)
        if not wait_for_full_isrs(admin, TOPIC, RECOVERY_TIMEOUT_S):
            log("ISRs are not full after healing; consuming what the leaders serve")
        log("stopping the workload, then consuming everything from the beginning ...")
        workload.stop(timeout_s=FINAL_READ_TIMEOUT_S)
        if group is not None:
            log("stopping the group consumers; a last member reads what the group has not ...")
            group.stop()
            summary.group = asdict(group.counts([p.history for p in workload.plans]))
        summary.faults = runner.done
        _count_workload(summary, workload, options)
    finally:
        if group is not None:
            group.kill_all()
        log("stopping the cluster ...")
        cluster_commands.down(cluster)
    if summary.compaction is not None:
        summary.compaction.update(_log_figures(cluster))
    if options.analyze:
        log("running the Spark analysis ...")
        from minikafka.deploy.analysis.report import analyze_run

        summary.analysis = analyze_run(cluster.run_dir)
    return summary
