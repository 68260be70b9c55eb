"""Which batch `fault corrupt` aims at, and what it says when the segment files hold none to aim at."""

from __future__ import annotations

from pathlib import Path

from minikafka.common.record_batch import Record, build_batch
from minikafka.deploy.faults import _batch_to_corrupt, _nothing_to_corrupt


def _segment(tmp_path: Path, *batches: bytes) -> Path:
    segment = tmp_path / "orders-0" / "00000000000000000000.log"
    segment.parent.mkdir(parents=True, exist_ok=True)
    segment.write_bytes(b"".join(batches))
    return segment


def test_the_batch_holding_the_offset_is_chosen(tmp_path: Path) -> None:
    first, second = build_batch([Record(b"a"), Record(b"b")], 0), build_batch([Record(b"c")], 2)
    segment = _segment(tmp_path, first, second)
    target = _batch_to_corrupt([segment], 2)
    assert target is not None and target.base_offset == 2 and target.position == len(first) + len(second) - 1
    assert _batch_to_corrupt([segment], 3) is None


def test_an_empty_segment_of_a_page_cache_broker_says_the_data_is_not_flushed(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    assert _batch_to_corrupt([segment], None) is None
    message = _nothing_to_corrupt("broker-2", "orders-0", [segment], None, page_cache=True)
    assert message.startswith("broker-2 has no orders-0 batch on disk to corrupt")
    assert "hold no batch" in message and "--set log.flush.interval.ms=1000" in message
    assert "log.simulate.page.cache" not in _nothing_to_corrupt("broker-2", "orders-0", [segment], None, False)


def test_an_offset_beyond_the_flushed_ones_names_what_is_on_disk(tmp_path: Path) -> None:
    segment = _segment(tmp_path, build_batch([Record(b"a"), Record(b"b")], 0))
    message = _nothing_to_corrupt("broker-1", "orders-0", [segment], 7, page_cache=False)
    assert "a batch holding offset 7" in message and "hold offsets 0 to 1" in message
