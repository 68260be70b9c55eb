"""Fault injection on the nodes of a local run: kill, stop, start, reboot, pause, resume, hold AlterPartition,
disk-full, disk-error (injected in the broker's storage layer), corrupt (a byte flipped in a segment file), and
network cuts between nodes (partition, isolate, heal).

Scriptable from Python (the chaos workload) and behind `minikafka fault ...`. Each fault is recorded as a
`fault_injected` event in RUN/logs/faults.jsonl, with the same line shape as the processes' event logs.
"""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from minikafka.common.event_log import render_json_line, utc_timestamp
from minikafka.common.grpc_support import sync_channel
from minikafka.common.record_batch import CorruptRecordError, RecordBatch, iter_batches
from minikafka.deploy.graceful_stop import describe, report_to_stderr, stop_nodes
from minikafka.deploy.local_cluster import (
    Cluster,
    ClusterError,
    NodeSpec,
    format_joining_controller,
    is_alive,
    kill,
    send_signal,
    spawn,
)
from minikafka.deploy.network import NetworkError, read_cuts, write_cuts
from minikafka.deploy.network_model import Cut, CutError
from minikafka.deploy.network_model import heal as heal_cuts
from minikafka.deploy.network_model import isolate as isolate_cut
from minikafka.deploy.network_model import partition as partition_cut
from minikafka.pb import fault_pb2, fault_pb2_grpc

# A fault call waits for its connection (a busy machine can take seconds over a TLS handshake) rather than
# failing at the first unanswered attempt; the deadline still bounds it.
FAULT_CALL_TIMEOUT_S = 15.0

# A cluster meant to be broken on purpose (demo, chaos): failures are detected in seconds, and unflushed data
# lives only in the broker's memory so a reboot can lose it.
FAULT_RUN_SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
    "log.simulate.page.cache": "true",
    "log.flush.interval.ms": "1000",
}

# A crashed consumer-protocol member holds its partitions until the coordinator's session timeout (45 s by default):
# fault runs make it as short as the classic members' own 6 s, so the group is not stalled most of the run.
CONSUMER_PROTOCOL_SETTINGS = {
    "group.consumer.session.timeout.ms": "6000",
    "group.consumer.heartbeat.interval.ms": "1000",
}


def record_fault(cluster: Cluster, fault: str, spec: NodeSpec, **fields: object) -> None:
    _write_fault_event(cluster, fault, target=spec.label, target_id=spec.node_id, role=spec.role, **fields)


def record_partition_fault(cluster: Cluster, fault: str, partition: str, **fields: object) -> None:
    """An operator's request on a partition (`<topic>-<index>`), e.g. a reassignment: no node is its target."""
    _write_fault_event(cluster, fault, target=partition, role="partition", partition=partition, **fields)


def record_network_fault(cluster: Cluster, fault: str, target: str, **fields: object) -> None:
    """A cut or heal: `target` names the groups ("1 <-> 101,102"); `mode` says how it is enforced."""
    _write_fault_event(cluster, fault, target=target, mode=cluster.network.cuts_mode, **fields)


def _write_fault_event(cluster: Cluster, fault: str, **fields: object) -> None:
    """One `fault_injected` line in RUN/logs/faults.jsonl, shaped as the processes' event lines."""
    path = cluster.run_dir / "logs" / "faults.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    event = {"ts": utc_timestamp(), "node": "fault-injector", "level": "info", "event": "fault_injected"}
    line = render_json_line({**event, "fault": fault, **fields})
    with path.open("a", encoding="utf-8") as stream:
        stream.write(line + "\n")


def describe_cut(cut: Cut) -> str:
    arrow = "->" if cut.one_way else "<->"
    return f"{','.join(map(str, sorted(cut.from_ids)))} {arrow} {','.join(map(str, sorted(cut.to_ids)))}"


class Faults:
    """Faults against one run; every method updates cluster.json's pids."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self._cuts: tuple[Cut, ...] = ()

    def _pid(self, spec: NodeSpec) -> int | None:
        return self.cluster.pids.get(spec.node_id)

    def _alive_pid(self, spec: NodeSpec) -> int:
        pid = self._pid(spec)
        if not is_alive(pid):
            raise ClusterError(f"{spec.label} is not running")
        assert pid is not None
        return pid

    def kill(self, node_id: int) -> None:
        spec = self.cluster.node(node_id)
        pid = self._alive_pid(spec)
        kill(pid)
        record_fault(self.cluster, "kill", spec, pid=pid)

    def stop(
        self, node_id: int, timeout_s: float | None = None, report: Callable[[str], object] = report_to_stderr
    ) -> None:
        """SIGTERM, and wait for a clean stop up to `timeout_s` (default: a broker's controlled-shutdown bound, a
        controller's 30 s); a node still running then is killed, and that is an error."""
        spec = self.cluster.node(node_id)
        pid = self._alive_pid(spec)
        record_fault(self.cluster, "stop", spec, pid=pid)
        outcome = stop_nodes({spec.label: (pid, spec.role)}, timeout_s, report)[spec.label]
        if not outcome.exited:
            raise ClusterError(describe(spec.label, outcome))

    def start(self, node_id: int) -> int:
        spec = self.cluster.node(node_id)
        if is_alive(self._pid(spec)):
            raise ClusterError(f"{spec.label} is already running (pid {self._pid(spec)})")
        pid = spawn(spec, self.cluster.network)
        self.cluster.pids[node_id] = pid
        self.cluster.save()
        record_fault(self.cluster, "start", spec, pid=pid)
        return pid

    def reboot(self, node_id: int, lose_unflushed: bool = False, wipe_disk: bool = False) -> int:
        spec = self.cluster.node(node_id)
        if lose_unflushed and not self._simulates_page_cache(spec):
            raise ClusterError(
                f"--lose-unflushed needs log.simulate.page.cache=true on {spec.label} "
                "(set it with `cluster up --set log.simulate.page.cache=true`)"
            )
        pid = self._pid(spec)
        if is_alive(pid):
            assert pid is not None
            kill(pid)
        if wipe_disk:
            shutil.rmtree(spec.data_dir, ignore_errors=True)
            spec.data_dir.mkdir(parents=True)
            if spec.role == "controller" and self.cluster.dynamic_quorum:
                # As an operator formats a replaced controller's disk: a new directory, no voter set.
                format_joining_controller(self.cluster, spec)
        new_pid = spawn(spec, self.cluster.network)
        self.cluster.pids[node_id] = new_pid
        self.cluster.save()
        record_fault(
            self.cluster, "reboot", spec, pid=pid, new_pid=new_pid, lose_unflushed=lose_unflushed, wipe_disk=wipe_disk
        )
        return new_pid

    def pause(self, node_id: int) -> None:
        spec = self.cluster.node(node_id)
        pid = self._alive_pid(spec)
        send_signal(pid, signal.SIGSTOP)
        record_fault(self.cluster, "pause", spec, pid=pid)

    def resume(self, node_id: int) -> None:
        spec = self.cluster.node(node_id)
        pid = self._alive_pid(spec)
        send_signal(pid, signal.SIGCONT)
        record_fault(self.cluster, "resume", spec, pid=pid)

    def hold_alter_partition(self, node_id: int) -> None:
        spec = self._broker(node_id)
        request = fault_pb2.HoldAlterPartitionRequest()
        response = self._fault_call(spec, lambda stub: stub.HoldAlterPartition, request)
        if response.error_code:
            raise ClusterError(f"{spec.label}: {response.error_message}")
        record_fault(self.cluster, "hold-alter-partition", spec)

    def release_alter_partition(self, node_id: int, keep_holding: bool = False) -> int:
        """Send the broker's held AlterPartition requests; with `keep_holding` it holds the ones it proposes next."""
        spec = self._broker(node_id)
        request = fault_pb2.ReleaseAlterPartitionRequest(keep_holding=keep_holding)
        response = self._fault_call(spec, lambda stub: stub.ReleaseAlterPartition, request)
        if response.error_code:
            raise ClusterError(f"{spec.label}: {response.error_message}")
        record_fault(self.cluster, "release-alter-partition", spec, released=response.released_requests)
        return response.released_requests

    def disk_full(self, node_id: int) -> None:
        self._inject_disk_fault(node_id, "disk-full")

    def disk_error(self, node_id: int) -> None:
        self._inject_disk_fault(node_id, "disk-error")

    def _inject_disk_fault(self, node_id: int, kind: str) -> None:
        """Every write (disk-full) or every read and write (disk-error) of the broker's log dir fails from now on;
        a restart of the broker clears it."""
        spec = self._broker(node_id)
        request = fault_pb2.InjectDiskFaultRequest(kind=kind)
        response = self._fault_call(spec, lambda stub: stub.InjectDiskFault, request)
        if response.error_code:
            raise ClusterError(f"{spec.label}: {response.error_message}")
        record_fault(self.cluster, kind, spec)

    def corrupt(self, node_id: int, partition: str, offset: int | None = None) -> int:
        """Flip one byte inside a batch's records (covered by its CRC) in the broker's segment file for
        `partition` (`<topic>-<index>`): the batch holding `offset`, else one in the middle of the oldest segment.
        Returns the corrupted batch's base offset."""
        spec = self.cluster.node(node_id)
        if spec.role != "broker":
            raise ClusterError(f"{spec.label} is not a broker; only brokers hold partition logs")
        segments = sorted((spec.data_dir / partition).glob("*.log"))
        if not segments:
            raise ClusterError(f"{spec.label} holds no segment of {partition}")
        target = _batch_to_corrupt(segments, offset)
        if target is None:
            raise ClusterError(
                _nothing_to_corrupt(spec.label, partition, segments, offset, self._simulates_page_cache(spec))
            )
        segment, position, base_offset = target
        with segment.open("r+b") as stream:
            stream.seek(position)
            byte = stream.read(1)
            stream.seek(position)
            stream.write(bytes([byte[0] ^ 0x01]))
        record_fault(
            self.cluster, "corrupt", spec, partition=partition, offset=base_offset, file=str(segment), position=position
        )
        return base_offset

    # ---- network cuts ----

    def partition(self, first: frozenset[int], second: frozenset[int], one_way: bool = False) -> Cut:
        """Drop calls from `first` to `second` (and back, unless `one_way`)."""
        try:
            cut = partition_cut(self.cluster.addresses, first, second, one_way)
        except CutError as error:
            raise ClusterError(str(error)) from None
        self._set_cuts((*self._current_cuts(), cut))
        record_network_fault(
            self.cluster, "partition", describe_cut(cut), role="network", **cut.to_json(), active=len(self._cuts)
        )
        return cut

    def isolate(self, node_id: int) -> Cut:
        """Cut one node from every other node of the run, both ways (clients still reach it)."""
        try:
            cut = isolate_cut(self.cluster.addresses, node_id)
        except CutError as error:
            raise ClusterError(str(error)) from None
        spec = self.cluster.node(node_id)
        self._set_cuts((*self._current_cuts(), cut))
        record_network_fault(
            self.cluster, "isolate", spec.label, target_id=node_id, role=spec.role, **cut.to_json(),
            active=len(self._cuts),
        )  # fmt: skip
        return cut

    def heal(self, node_ids: tuple[int, ...] = ()) -> tuple[Cut, ...]:
        """Remove every cut, or those touching `node_ids`; returns the healed cuts."""
        try:
            heal_cuts((), self.cluster.addresses, node_ids)  # unknown ids are reported before a run that is down
            result = heal_cuts(self._current_cuts(), self.cluster.addresses, node_ids)
        except CutError as error:
            raise ClusterError(str(error)) from None
        self._set_cuts(result.remaining)
        record_network_fault(
            self.cluster, "heal", ",".join(map(str, node_ids)) or "all", role="network", nodes=list(node_ids),
            healed=[cut.to_json() for cut in result.healed], active=len(result.remaining),
        )  # fmt: skip
        return result.healed

    def _current_cuts(self) -> tuple[Cut, ...]:
        if not any(is_alive(self.cluster.pids.get(spec.node_id)) for spec in self.cluster.nodes):
            raise ClusterError(f"the run in {self.cluster.run_dir} is down (no node is running)")
        return read_cuts(self.cluster.run_dir)

    def _set_cuts(self, cuts: tuple[Cut, ...]) -> None:
        try:
            write_cuts(
                self.cluster.run_dir,
                self.cluster.network,
                self.cluster.addresses,
                cuts,
                self.cluster.inter_broker_addresses,
            )
        except NetworkError as error:
            raise ClusterError(str(error)) from None
        self._cuts = cuts

    def _broker(self, node_id: int) -> NodeSpec:
        spec = self.cluster.node(node_id)
        if spec.role != "broker":
            raise ClusterError(f"{spec.label} is not a broker; only brokers send AlterPartition")
        self._alive_pid(spec)
        return spec

    def _fault_call(self, spec: NodeSpec, method: Callable[[fault_pb2_grpc.FaultStub], Any], request: Any) -> Any:
        """One call to the node's fault service, on a channel closed afterwards."""
        with sync_channel(spec.inter_node_address, self.cluster.admin_tls) as channel:
            return method(fault_pb2_grpc.FaultStub(channel))(request, timeout=FAULT_CALL_TIMEOUT_S, wait_for_ready=True)

    def _simulates_page_cache(self, spec: NodeSpec) -> bool:
        try:
            text = spec.config_path.read_text()
        except FileNotFoundError:
            return False
        return any(line.strip().replace(" ", "") == "log.simulate.page.cache=true" for line in text.splitlines())


class BatchTarget(NamedTuple):
    segment: Path
    position: int  # the byte to flip: the batch's last, inside its last record
    base_offset: int


def _batch_to_corrupt(segments: list[Path], offset: int | None) -> BatchTarget | None:
    """The batch holding `offset`, else one in the middle of the oldest segment with a batch; None when no batch on
    disk holds it."""
    for segment in segments:
        batches = _batches_on_disk(segment)
        if offset is None and batches:
            chosen = batches[len(batches) // 2]
            return BatchTarget(segment, chosen.position + chosen.size - 1, chosen.base_offset)
        for batch in batches:
            if offset is not None and batch.base_offset <= offset <= batch.last_offset:
                return BatchTarget(segment, batch.position + batch.size - 1, batch.base_offset)
    return None


def _batches_on_disk(segment: Path) -> list[RecordBatch]:
    try:
        return list(iter_batches(segment.read_bytes()))
    except CorruptRecordError:
        return []  # a torn tail (unflushed or already damaged): nothing here to aim at reliably


def _nothing_to_corrupt(label: str, partition: str, segments: list[Path], offset: int | None, page_cache: bool) -> str:
    """Why `fault corrupt` found no batch: what the segment files hold, and, for a broker simulating the page
    cache, that its appends reach them only when the log is flushed."""
    batches = [batch for segment in segments for batch in _batches_on_disk(segment)]
    held = f"offsets {batches[0].base_offset} to {batches[-1].last_offset}" if batches else "no batch"
    wanted = "a batch" if offset is None else f"a batch holding offset {offset}"
    message = f"{label} has no {partition} batch on disk to corrupt: `fault corrupt` flips a byte of {wanted}, and "
    message += f"its segment files in {segments[0].parent} hold {held}"
    if page_cache:
        message += (
            " (log.simulate.page.cache=true keeps appended batches in the broker's memory until the log is flushed: "
            "on a segment roll, a clean shutdown, or every log.flush.interval.ms; start the cluster with "
            "--set log.flush.interval.ms=1000 to have them on disk)"
        )
    return message


def read_faults(cluster: Cluster) -> list[dict]:
    path = cluster.run_dir / "logs" / "faults.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
