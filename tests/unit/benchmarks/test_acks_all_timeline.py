"""benchmarks/acks_all_timeline.py: a capture's lines split into writes, and a write's steps, on a made-up capture."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # the benchmarks are scripts, not a package

from acks_all_timeline import LeaderPorts, parse_capture, segments_us, summarize, writes  # noqa: E402

LEADER = LeaderPorts("127.0.2.3.9092", "127.0.2.3.9093")
CLIENT, FOLLOWER_A, FOLLOWER_B = "127.0.0.1.50000", "127.0.0.1.50001", "127.0.0.1.50002"


def line(at_s: float, source: str, destination: str, size: int) -> str:
    return f"{at_s:.6f} IP {source} > {destination}: tcp {size}"


def one_write(start: float) -> list[str]:
    return [
        line(start, CLIENT, LEADER.client, 1162),
        line(start + 0.000020, LEADER.client, CLIENT, 0),  # a bare ACK: no payload
        line(start + 0.000300, LEADER.replication, FOLLOWER_A, 1205),
        line(start + 0.000450, LEADER.replication, FOLLOWER_B, 1205),
        line(start + 0.000700, FOLLOWER_A, LEADER.replication, 121),
        line(start + 0.000900, FOLLOWER_B, LEADER.replication, 122),
        line(start + 0.001200, LEADER.client, CLIENT, 56),
    ]


def test_a_clean_write_is_split_at_each_message() -> None:
    packets = parse_capture(one_write(100.0) + ["tcpdump: some banner line"])
    assert len(packets) == 6  # the ACK without payload and the banner are not packets of a write
    [write] = writes(packets, LEADER, 1024)
    assert write.clean()
    steps = segments_us(write)
    assert steps["produce in to first Fetch answer out"] == pytest.approx(300)
    assert steps["first answer to second answer"] == pytest.approx(150)
    assert steps["a follower's turnaround (answer out to its next Fetch in)"] == pytest.approx(425)  # 400 and 450
    assert steps["last follower Fetch in to response out"] == pytest.approx(300)
    assert steps["produce in to response out"] == pytest.approx(1200)


def test_a_write_missing_a_fetch_is_counted_but_left_out() -> None:
    broken = [text for text in one_write(200.0) if FOLLOWER_B + " >" not in text]
    found = writes(parse_capture(one_write(100.0) + broken), LEADER, 1024)
    assert [w.clean() for w in found] == [True, False]
    summary = summarize(found)
    assert summary["writes"] == 2 and summary["clean"] == 1
    assert summary["steps_us"]["produce in to response out"]["p50"] == pytest.approx(1200)
