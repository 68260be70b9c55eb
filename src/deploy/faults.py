"""Fault injection on the nodes of a local run: kill, stop, start, reboot, pause, resume, hold AlterPartition,
disk-full, disk-error (injected in the broker's storage layer), corrupt (a byte flipped in a segment file).

Scriptable from Python (the chaos workload) and behind `minikafka fault ...`. Each fault is recorded as a
`fault_injected` event in RUN/logs/faults.jsonl, with the same line shape as the processes' event logs.
"""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

from common.event_log import render_json_line, utc_timestamp
from common.grpc_support import sync_channel
from common.record_batch import CorruptRecordError, iter_batches
from deploy.local_cluster import Cluster, ClusterError, NodeSpec, is_alive, kill, send_signal, spawn, stop
from minikafka_pb import fault_pb2, fault_pb2_grpc

# A cluster meant to be broken on purpose (demo, chaos): failures are detected in seconds, and unflushed data
# lives only in the broker's memory so a reboot can lose it.
FAULT_RUN_SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
    "log.simulate.page.cache": "true",
    "log.flush.interval.ms": "1000",
}


def record_fault(cluster: Cluster, fault: str, spec: NodeSpec, **fields: object) -> None:
    path = cluster.run_dir / "logs" / "faults.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    line = render_json_line(
        {
            "ts": utc_timestamp(),
            "node": "fault-injector",
            "level": "info",
            "event": "fault_injected",
            "fault": fault,
            "target": spec.label,
            "target_id": spec.node_id,
            "role": spec.role,
            **fields,
        }
    )
    with path.open("a", encoding="utf-8") as stream:
        stream.write(line + "\n")


class Faults:
    """Faults against one run; every method updates cluster.json's pids."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

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

    def stop(self, node_id: int, timeout_s: float = 30.0) -> None:
        spec = self.cluster.node(node_id)
        pid = self._alive_pid(spec)
        record_fault(self.cluster, "stop", spec, pid=pid)
        if not stop(pid, timeout_s):
            raise ClusterError(f"{spec.label} did not stop within {timeout_s:.0f}s; it was killed")

    def start(self, node_id: int) -> int:
        spec = self.cluster.node(node_id)
        if is_alive(self._pid(spec)):
            raise ClusterError(f"{spec.label} is already running (pid {self._pid(spec)})")
        pid = spawn(spec)
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
        new_pid = spawn(spec)
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
        response = self._fault_stub(spec).HoldAlterPartition(fault_pb2.HoldAlterPartitionRequest(), timeout=5)
        if response.error_code:
            raise ClusterError(f"{spec.label}: {response.error_message}")
        record_fault(self.cluster, "hold-alter-partition", spec)

    def release_alter_partition(self, node_id: int, keep_holding: bool = False) -> int:
        """Send the broker's held AlterPartition requests; with `keep_holding` it holds the ones it proposes next."""
        spec = self._broker(node_id)
        request = fault_pb2.ReleaseAlterPartitionRequest(keep_holding=keep_holding)
        response = self._fault_stub(spec).ReleaseAlterPartition(request, timeout=5)
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
        response = self._fault_stub(spec).InjectDiskFault(fault_pb2.InjectDiskFaultRequest(kind=kind), timeout=5)
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
        segment, position, base_offset = _batch_to_corrupt(segments, offset)
        with segment.open("r+b") as stream:
            stream.seek(position)
            byte = stream.read(1)
            stream.seek(position)
            stream.write(bytes([byte[0] ^ 0x01]))
        record_fault(
            self.cluster, "corrupt", spec, partition=partition, offset=base_offset, file=str(segment), position=position
        )
        return base_offset

    def _broker(self, node_id: int) -> NodeSpec:
        spec = self.cluster.node(node_id)
        if spec.role != "broker":
            raise ClusterError(f"{spec.label} is not a broker; only brokers send AlterPartition")
        self._alive_pid(spec)
        return spec

    def _fault_stub(self, spec: NodeSpec) -> fault_pb2_grpc.FaultStub:
        return fault_pb2_grpc.FaultStub(sync_channel(spec.address))

    def _simulates_page_cache(self, spec: NodeSpec) -> bool:
        try:
            text = spec.config_path.read_text()
        except FileNotFoundError:
            return False
        return any(line.strip().replace(" ", "") == "log.simulate.page.cache=true" for line in text.splitlines())


def _batch_to_corrupt(segments: list[Path], offset: int | None) -> tuple[Path, int, int]:
    """(segment, byte position, base offset): the last byte of the chosen batch, inside its last record."""
    for segment in segments:
        data = segment.read_bytes()
        try:
            batches = list(iter_batches(data))
        except CorruptRecordError:
            batches = []  # a torn tail (unflushed or already damaged): nothing here to aim at reliably
        if offset is None and batches:
            chosen = batches[len(batches) // 2]
            return segment, chosen.position + chosen.size - 1, chosen.base_offset
        for batch in batches:
            if offset is not None and batch.base_offset <= offset <= batch.last_offset:
                return segment, batch.position + batch.size - 1, batch.base_offset
    where = "any batch" if offset is None else f"offset {offset}"
    raise ClusterError(f"no flushed batch holds {where} in {segments[0].parent}")


def read_faults(cluster: Cluster) -> list[dict]:
    path = cluster.run_dir / "logs" / "faults.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
