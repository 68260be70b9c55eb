"""`minikafka dump-log PATH [--json]`: what a segment (.log) or offset index (.index) file holds, like Kafka's
DumpLogSegments. Reads the file as it is on disk and never repairs it, so it shows exactly where a log is torn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from minikafka.common.compression import codec_name
from minikafka.common.errors import KafkaError
from minikafka.common.record_batch import CorruptRecordError, read_header
from minikafka.storage.offset_index import read_index_file


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
    if path.suffix != ".log":
        raise ValueError(f"{path}: expected a .log or .index file")
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
            "producer_id": batch.producer_id,
            "compression": codec_name(batch.compression_type),
        }
        if print_records and entry["crc_valid"]:
            try:
                entry["records"] = [
                    {
                        "offset": record.offset,
                        "timestamp": record.timestamp_ms,
                        "key": _text(record.key),
                        "value": _text(record.value),
                    }
                    for record in batch.records()
                ]
            except KafkaError as corrupt:  # a bad record, or compressed bytes that do not decode
                entry["records_error"] = corrupt.message
        batches.append(entry)
        position += batch.size
    return {
        "path": str(path),
        "type": "log",
        "base_offset": base_offset,
        "size_bytes": len(data),
        "batches": batches,
        "error": error,
    }


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "backslashreplace")


def format_text(dump: dict[str, Any]) -> str:
    """Human-readable lines in the style of Kafka's DumpLogSegments."""
    lines = [f"Dumping {dump['path']}"]
    if dump["type"] == "index":
        lines += [f"offset: {e['offset']} position: {e['position']}" for e in dump["entries"]]
        return "\n".join(lines)
    for b in dump["batches"]:
        lines.append(
            f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['count']} "
            f"partitionLeaderEpoch: {b['leader_epoch']} position: {b['position']} size: {b['size_bytes']} "
            f"CreateTime: {b['max_timestamp']} compresscodec: {b['compression']} crc: {b['crc']} "
            f"isvalid: {str(b['crc_valid']).lower()}"
        )
        for r in b.get("records", []):
            lines.append(f"| offset: {r['offset']} CreateTime: {r['timestamp']} key: {r['key']} payload: {r['value']}")
    if dump["error"]:
        e = dump["error"]
        lines.append(f"Found {e['trailing_bytes']} invalid bytes at position {e['position']}: {e['reason']}")
    return "\n".join(lines)
