"""The follower's handling of one partition's Fetch answer: a failing append is logged once, not at every retry
(before, a stuck follower logged the same warning about ten times a second)."""

from __future__ import annotations

from types import SimpleNamespace

import structlog
from structlog.testing import capture_logs

from broker.fetcher import _apply
from common.errors import ErrorCode, KafkaError
from minikafka_pb import broker_pb2


class FlakyLog:
    log_end_offset = 5
    high_watermark = 0

    def __init__(self) -> None:
        self.fail = True

    def append_as_follower(self, records: bytes, now_ms: int) -> None:
        if self.fail:
            raise KafkaError(ErrorCode.CORRUPT_MESSAGE, "CRC mismatch at offset 5")
        self.log_end_offset = 6


def test_a_repeating_append_failure_is_logged_once_and_its_recovery_once() -> None:
    log = FlakyLog()
    replica = SimpleNamespace(tp="t-0", log=log)
    answer = broker_pb2.FetchResponse.PartitionData(error_code=0, high_watermark=6, records=b"batch")
    failing: dict[str, str] = {}
    with capture_logs() as events:
        for _ in range(10):
            assert not _apply(replica, answer, structlog.get_logger(), failing)  # type: ignore[arg-type]
        log.fail = False
        assert _apply(replica, answer, structlog.get_logger(), failing)  # type: ignore[arg-type]
    assert [e["event"] for e in events] == ["follower_append_failed", "follower_append_recovered"]
    assert failing == {}
