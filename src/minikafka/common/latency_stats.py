"""Latency percentiles the way Kafka's perf tools report them (avg, p50/p95/p99/p999, max), in milliseconds."""

from __future__ import annotations

from dataclasses import dataclass, field

PERCENTILES = (0.5, 0.95, 0.99, 0.999)


@dataclass
class LatencyStats:
    samples_ms: list[float] = field(default_factory=list)

    def record(self, latency_ms: float) -> None:
        self.samples_ms.append(latency_ms)

    def summary(self) -> dict[str, float | int | None]:
        ordered = sorted(self.samples_ms)
        count = len(ordered)
        result: dict[str, float | int | None] = {
            "count": count,
            "avg_ms": sum(ordered) / count if count else None,
            "max_ms": ordered[-1] if count else None,
        }
        for q in PERCENTILES:
            # Nearest rank, as Kafka's ProducerPerformance: the sample at index floor(q * count).
            result[f"p{str(q * 100).rstrip('0').rstrip('.').replace('.', '')}_ms"] = (
                ordered[min(count - 1, int(q * count))] if count else None
            )
        return result
