"""NoDeniedWriteVisible: a send refused with an authorization error is never read, and the values of a producer
the run's ACLs refuse (refused_by_acls) are never acknowledged nor read, whatever each of its sends was told; the
allowed producers' writes and their ordinary failures are not its business."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minikafka.deploy.analysis.denied_writes import denied_sends, denied_writes_visible
from minikafka.deploy.analysis.history import load_consumed, load_produced
from minikafka.deploy.analysis.verdict import verdict_from

pytestmark = pytest.mark.spark


def line(
    offset: int | None, value: str, principal: str | None, error: str | None = None, refused: bool = False
) -> dict:
    return {
        "ts": "2026-11-22T18:30:00.000001Z",
        "topic": "chaos",
        "partition": 0,
        "offset": offset,
        "value": value,
        "acks": "all",
        "error": error,
        "latency_ms": 1.5,
        **({"principal": principal} if principal is not None else {}),
        **({"refused_by_acls": True} if refused else {}),
    }


def read(offset: int, value: str) -> dict:
    return {"topic": "chaos", "partition": 0, "offset": offset, "key": None, "value": value, "leader_epoch": 1}


WRITER = [
    line(0, "writer-0", "User:writer-0"),
    line(None, "writer-1", "User:writer-0", "NOT_ENOUGH_REPLICAS"),  # an allowed producer's ordinary failure
    line(1, "writer-2", "User:writer-0"),
]
BOB = [
    line(None, "bob-0", "User:bob", "TOPIC_AUTHORIZATION_FAILED", refused=True),
    line(None, "bob-1", "User:bob", "TOPIC_AUTHORIZATION_FAILED", refused=True),
    line(None, "bob-2", "User:bob", "REQUEST_TIMED_OUT", refused=True),  # its fate unknown to bob: still not there
]
CAROL = [line(None, "carol-0", "User:carol", "CLUSTER_AUTHORIZATION_FAILED", refused=True)]
READS = [read(0, "writer-0"), read(1, "writer-2")]


def _verdict(spark, tmp_path: Path, produced: list[dict], consumed: list[dict]):  # noqa: ANN001, ANN202
    history = tmp_path / "history"
    history.mkdir(parents=True)
    (history / "produce-writer-0.jsonl").write_text("".join(json.dumps(x) + "\n" for x in produced))
    (history / "consume-final.jsonl").write_text("".join(json.dumps(x) + "\n" for x in consumed))
    produced_frame, consumed_frame = load_produced(spark, tmp_path), load_consumed(spark, tmp_path)
    return verdict_from(
        "NoDeniedWriteVisible",
        "",
        denied_writes_visible(produced_frame, consumed_frame),
        checked=denied_sends(produced_frame).count(),
    )


def test_refused_producers_with_nothing_visible_pass(spark, tmp_path: Path) -> None:  # noqa: ANN001
    verdict = _verdict(spark, tmp_path, WRITER + BOB + CAROL, READS)
    assert verdict.passed and verdict.checked == 4  # every send of bob and carol


def test_a_refused_value_read_back_fails(spark, tmp_path: Path) -> None:  # noqa: ANN001
    verdict = _verdict(spark, tmp_path, WRITER + BOB, [*READS, read(2, "bob-1")])
    assert not verdict.passed
    assert verdict.rows == [
        {"producer": "User:bob", "topic": "chaos", "value": "bob-1", "error": "TOPIC_AUTHORIZATION_FAILED",
         "seen": "read", "partition": 0, "offset": 2}
    ]  # fmt: skip


def test_a_refused_producers_timed_out_value_read_back_fails(spark, tmp_path: Path) -> None:  # noqa: ANN001
    verdict = _verdict(spark, tmp_path, WRITER + BOB, [*READS, read(2, "bob-2")])
    assert [(r["value"], r["error"], r["seen"]) for r in verdict.rows] == [("bob-2", "REQUEST_TIMED_OUT", "read")]


def test_a_refused_producers_acknowledged_write_fails_even_unread(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """A broker that let one of carol's batches through (say, before it had replayed her ACLs)."""
    verdict = _verdict(spark, tmp_path, WRITER + CAROL + [line(7, "carol-1", "User:carol", refused=True)], READS)
    assert [(r["producer"], r["value"], r["seen"], r["offset"]) for r in verdict.rows] == [
        ("User:carol", "carol-1", "acknowledged", 7)
    ]


def test_a_send_refused_by_authorization_is_never_read_whoever_sent_it(spark, tmp_path: Path) -> None:  # noqa: ANN001
    """A producer the ACLs allow, refused once (a broker answering before it replayed them): its acknowledged writes
    are fine, the refused one must not be read; without a principal its history file names the producer."""
    refused_once = [*WRITER, line(None, "writer-3", "User:writer-0", "TOPIC_AUTHORIZATION_FAILED")]
    assert _verdict(spark, tmp_path / "kept", refused_once, READS).passed
    anonymous = [line(None, "anon-0", None, "TOPIC_AUTHORIZATION_FAILED")]
    reads = [*READS, read(5, "writer-3"), read(6, "anon-0")]
    verdict = _verdict(spark, tmp_path / "read", refused_once + anonymous, reads)
    assert [(r["producer"], r["value"], r["seen"]) for r in verdict.rows] == [
        ("User:writer-0", "writer-3", "read"),
        ("produce-writer-0", "anon-0", "read"),
    ]
