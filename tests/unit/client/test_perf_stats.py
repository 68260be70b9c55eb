"""The perf tools' pure parts: latency percentiles, the throughput throttle, Kafka's summary line."""

from __future__ import annotations

from minikafka.client.perf_produce import report_line, throttle_delay_s
from minikafka.common.latency_stats import LatencyStats


def test_percentiles_are_nearest_rank_like_kafkas_tool() -> None:
    stats = LatencyStats([float(i) for i in range(1, 1001)])
    summary = stats.summary()
    assert summary == {
        "count": 1000,
        "avg_ms": 500.5,
        "max_ms": 1000.0,
        "p50_ms": 501.0,
        "p95_ms": 951.0,
        "p99_ms": 991.0,
        "p999_ms": 1000.0,
    }
    assert LatencyStats().summary()["p99_ms"] is None


def test_throttle_keeps_the_rate_and_never_waits_without_a_cap() -> None:
    assert throttle_delay_s(100, 0.5, 100) == 0.5  # 100 records at 100/s are due at 1.0 s
    assert throttle_delay_s(100, 2.0, 100) == 0.0  # behind schedule: send at once
    assert throttle_delay_s(10**6, 0.0, -1) == 0.0


def test_summary_line_has_kafkas_fields() -> None:
    line = report_line(1000, 2.0, 1024, LatencyStats([1.0, 2.0, 3.0]).summary())
    assert line == (
        "1000 records sent, 500.0 records/sec (0.49 MB/sec), 2.00 ms avg latency, 3 ms max latency, "
        "2 ms 50th, 3 ms 95th, 3 ms 99th, 3 ms 99.9th."
    )
