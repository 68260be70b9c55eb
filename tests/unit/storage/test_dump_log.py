"""dump-log: batches of a segment (flagging a torn or corrupt tail) and entries of an index."""

from __future__ import annotations

import json
from pathlib import Path

from storage_helpers import batch_of, compressed, rewritten, three

from minikafka.cli import main
from minikafka.common.compression import CompressionType
from minikafka.storage.dump_log import dump_log, format_text
from minikafka.storage.log_config import LogConfig
from minikafka.storage.partition_log import PartitionLog


def test_dump_segment_and_index(tmp_path: Path, capsys) -> None:  # noqa: ANN001 - pytest's capsys fixture
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(index_interval_bytes=50), 0)
    for i in range(4):
        log.append_as_leader(batch_of([b"v%d" % i, b"w%d" % i]), 7, i)
    log.close()
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF  # corrupt the last batch's last record
    segment.write_bytes(bytes(data) + b"\x00\x00\x00")  # and leave a torn tail

    dump = dump_log(segment, print_records=True)
    batches = dump["batches"]
    assert [(b["base_offset"], b["last_offset"], b["count"], b["leader_epoch"]) for b in batches] == [
        (0, 1, 2, 7),
        (2, 3, 2, 7),
        (4, 5, 2, 7),
        (6, 7, 2, 7),
    ]
    assert [b["crc_valid"] for b in batches] == [True, True, True, False]
    assert batches[0]["records"][1] == {"offset": 1, "timestamp": 0, "key": None, "value": "w0"}
    assert dump["error"]["trailing_bytes"] == 3
    assert "isvalid: false" in format_text(dump)

    index = dump_log(tmp_path / "t-0" / "00000000000000000000.index")
    assert index["entries"] and index["entries"][0]["position"] > 0
    assert main(["dump-log", str(segment), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["batches"][3]["crc_valid"] is False


def test_dump_compressed_batches(tmp_path: Path) -> None:
    """dump-log decodes each codec's records and names the codec; bytes that do not decode are reported, not raised."""
    log = PartitionLog.open(tmp_path / "t-0", LogConfig(), 0)
    for codec in CompressionType:
        batch = batch_of([b"%s-%d" % (codec.name.encode(), i) for i in range(3)])
        log.append_as_leader(batch if codec is CompressionType.NONE else compressed(batch, codec), 1, 0)
    log.close()
    segment = tmp_path / "t-0" / "00000000000000000000.log"
    dump = dump_log(segment, print_records=True)
    assert [b["compression"] for b in dump["batches"]] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert [r["value"] for r in dump["batches"][3]["records"]] == ["LZ4-0", "LZ4-1", "LZ4-2"]
    assert [r["offset"] for r in dump["batches"][4]["records"]] == [12, 13, 14]
    assert "compresscodec: zstd" in format_text(dump)

    # CRC-valid, gzip's bits on records that are not a gzip stream (a broker refuses it; a disk may still hold it)
    segment.write_bytes(rewritten(three(), attributes=CompressionType.GZIP))
    broken = dump_log(segment, print_records=True)["batches"][0]
    assert broken["crc_valid"] and "records" not in broken and "gzip" in broken["records_error"]
