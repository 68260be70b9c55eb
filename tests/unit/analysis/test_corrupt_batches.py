"""The replica-log scan names a batch whose CRC does not match (a flipped byte) where a replica's valid prefix
stops, and tells it apart from a torn tail (a crash's unfinished write). Plain Python: the scan is what each Spark
task runs."""

from __future__ import annotations

from pathlib import Path

from minikafka.common.record_batch import Record, build_batch
from minikafka.deploy.analysis.replica_logs import read_replica


def write_segment(directory: Path, tail: bytes = b"", flip_in_batch: int | None = None) -> list[bytes]:
    directory.mkdir(parents=True)
    batches = [build_batch([Record(f"v{offset}".encode()), Record(b"x")], offset, 0) for offset in (0, 2, 4)]
    data = bytearray(b"".join(batches))
    if flip_in_batch is not None:
        end = sum(len(b) for b in batches[: flip_in_batch + 1])
        data[end - 1] ^= 0x01  # the last byte of that batch: inside its records, covered by the CRC
    (directory / "00000000000000000000.log").write_bytes(bytes(data) + tail)
    return batches


def test_a_flipped_byte_is_named_with_its_batch_and_both_crcs(tmp_path: Path) -> None:
    batches = write_segment(tmp_path / "t-0", flip_in_batch=1)
    rows = list(read_replica("broker-2", str(tmp_path / "t-0")))
    [corrupt] = [row for kind, row in rows if kind == "corrupt"]
    node, tp, segment, position, base, last, stored, computed = corrupt
    assert (node, tp, segment, position, base, last) == ("broker-2", "t-0", "00000000000000000000.log",
                                                         len(batches[0]), 2, 3)  # fmt: skip
    assert stored != computed
    [replica] = [row for kind, row in rows if kind == "replica"]
    assert replica[3] == 2 and replica[5] is True  # the valid prefix ends before it


def test_a_torn_tail_is_not_a_corrupt_batch(tmp_path: Path) -> None:
    write_segment(tmp_path / "t-0", tail=build_batch([Record(b"torn")], 6, 0)[:20])
    rows = list(read_replica("broker-1", str(tmp_path / "t-0")))
    assert [kind for kind, _ in rows if kind == "corrupt"] == []
    [replica] = [row for kind, row in rows if kind == "replica"]
    assert replica[3] == 6 and replica[5] is True
