"""`minikafka dump-log PATH [--json]`: what a segment (.log), offset index (.index) or aborted-transaction index
(.txnindex) file holds, like Kafka's DumpLogSegments. Reads the file as it is on disk and never repairs it, so it
shows exactly where a log is torn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minikafka.common.compression import codec_name
from minikafka.common.control_batch import read_marker
from minikafka.common.errors import KafkaError
from minikafka.common.record_batch import CorruptRecordError, RecordBatch, read_header
from minikafka.storage.offset_index import read_index_file
from minikafka.storage.transaction_index import TXN_INDEX_SUFFIX, read_entries


def dump_log(path: Path, print_records: bool = False) -> dict[str, Any]:
    """JSON-able description of a `.log` file (every batch) or an `.index` file (every entry)."""
    base_offset = int(path.stem) if path.stem.isdigit() else 0
    if path.suffix == ".index":
        entries = read_index_file(path, base_offset)
        return {
            "path": str(path),
            "type": "index",
            "base_offset": base_offset,
            "entries": [{"offset": offset, "position": position} for offset, position in entries],
        }
    if path.suffix == TXN_INDEX_SUFFIX:
        return _dump_txn_index(path, base_offset)
    if path.suffix != ".log":
        raise ValueError(f"{path}: expected a .log, .index or .txnindex file")
    data = path.read_bytes()
    batches: list[dict[str, Any]] = []
    position = 0
    error = None
    while position < len(data):
        try:
            batch = read_header(data, position)
        except CorruptRecordError as corrupt:
            error = {"position": position, "reason": corrupt.message, "trailing_bytes": len(data) - position}
            break
        batches.append(_dump_batch(batch, position, print_records))
        position += batch.size
    return {
        "path": str(path),
        "type": "log",
        "base_offset": base_offset,
        "size_bytes": len(data),
        "batches": batches,
        "error": error,
    }


def _dump_txn_index(path: Path, base_offset: int) -> dict[str, Any]:
    return {
        "path": str(path),
        "type": "txnindex",
        "base_offset": base_offset,
        "entries": [
            {
                "producer_id": e.producer_id,
                "first_offset": e.first_offset,
                "last_offset": e.last_offset,
                "last_stable_offset": e.last_stable_offset,
            }
            for e in read_entries(path)
        ],
    }


def _dump_batch(batch: RecordBatch, position: int, print_records: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "base_offset": batch.base_offset,
        "last_offset": batch.last_offset,
        "leader_epoch": batch.partition_leader_epoch,
        "count": batch.records_count,
        "size_bytes": batch.size,
        "position": position,
        "crc": batch.crc,
        "crc_valid": batch.is_valid(),
        "max_timestamp": batch.max_timestamp,
        "timestamp_type": "LogAppendTime" if batch.has_log_append_time else "CreateTime",
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "is_transactional": batch.is_transactional,
        "is_control": batch.is_control,
        "compression": codec_name(batch.compression_type),
    }
    if batch.is_control and entry["crc_valid"]:
        marker = read_marker(batch)
        if marker is not None:  # Kafka's endTxnMarker column
            entry["end_txn_marker"] = {
                "type": "COMMIT" if marker.commit else "ABORT",
                "coordinator_epoch": marker.coordinator_epoch,
            }
    if print_records and entry["crc_valid"]:
        try:
            entry["records"] = [
                {
                    "offset": record.offset,
                    "timestamp": batch.timestamp_of(record),
                    "key": _text(record.key),
                    "value": _text(record.value),
                }
                for record in batch.records()
            ]
        except KafkaError as corrupt:  # a bad record, or compressed bytes that do not decode
            entry["records_error"] = corrupt.message
    return entry


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "backslashreplace")


def format_text(dump: dict[str, Any]) -> str:
    """Human-readable lines in the style of Kafka's DumpLogSegments."""
    lines = [f"Dumping {dump['path']}"]
    if dump["type"] == "index":
        lines += [f"offset: {e['offset']} position: {e['position']}" for e in dump["entries"]]
        return "\n".join(lines)
    if dump["type"] == "txnindex":
        lines += [
            f"version: 0 producerId: {e['producer_id']} firstOffset: {e['first_offset']} "
            f"lastOffset: {e['last_offset']} lastStableOffset: {e['last_stable_offset']}"
            for e in dump["entries"]
        ]
        return "\n".join(lines)
    for b in dump["batches"]:
        lines.append(
            f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['count']} "
            f"partitionLeaderEpoch: {b['leader_epoch']} position: {b['position']} size: {b['size_bytes']} "
            f"{b['timestamp_type']}: {b['max_timestamp']} producerId: {b['producer_id']} "
            f"producerEpoch: {b['producer_epoch']} baseSequence: {b['base_sequence']} "
            f"isTransactional: {str(b['is_transactional']).lower()} isControl: {str(b['is_control']).lower()} "
            f"compresscodec: {b['compression']} crc: {b['crc']} "
            f"isvalid: {str(b['crc_valid']).lower()}"
        )
        if "end_txn_marker" in b:
            marker = b["end_txn_marker"]
            lines.append(f"| endTxnMarker: {marker['type']} coordinatorEpoch: {marker['coordinator_epoch']}")
        for r in b.get("records", []):
            stamp = f"{b['timestamp_type']}: {r['timestamp']}"
            lines.append(f"| offset: {r['offset']} {stamp} key: {r['key']} payload: {r['value']}")
    if dump["error"]:
        e = dump["error"]
        lines.append(f"Found {e['trailing_bytes']} invalid bytes at position {e['position']}: {e['reason']}")
    return "\n".join(lines)
