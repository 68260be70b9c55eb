"""dump-log: batches of a segment (flagging a torn or corrupt tail) and entries of an index."""

from __future__ import annotations

import json
from pathlib import Path

from storage_helpers import batch_of

from minikafka.cli import main
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
