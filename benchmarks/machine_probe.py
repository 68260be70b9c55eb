"""How fast the machine itself is before a run, for telling a slow period of the host from a slow tree.

On this shared 2-core virtual machine the same tree now and then spends 1.5-2x the CPU-seconds for the same records,
with nothing else of ours running, for minutes at a time. A fixed piece of pure-Python work, timed in CPU
milliseconds while nothing else of ours runs, shows those periods too (15-16 ms quiet, 20-22 ms in the slow periods
seen): it is taken before each run's cluster starts, as the run's own load would raise it during the run.
"""

from __future__ import annotations

import statistics
import time

DISTURBED = 1.15  # a run whose probe is this much over the quickest run's started in a slow period of the host


def _fixed_work() -> int:
    total = 0
    for i in range(200_000):
        total += i * i
    return total


def machine_probe_ms(seconds: float = 2.0) -> float:
    """The median CPU milliseconds of the fixed work, repeated for about `seconds` with short pauses."""
    samples: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.thread_time()
        _fixed_work()
        samples.append((time.thread_time() - start) * 1000)
        time.sleep(0.05)  # a quantum the host may give to another tenant, as it would during a run
    return round(statistics.median(samples), 2)


def disturbed(probes: list[float]) -> list[int]:
    """The indexes of the runs whose probe shows the host slower than before the quickest run."""
    quickest = min(probes, default=0.0)
    return [n for n, probe in enumerate(probes) if probe > DISTURBED * quickest]


def slow_rounds(pairs: list[tuple[float, float]]) -> set[int]:
    """The rounds (each the probes of its two runs) in which either run started in a slow period of the host."""
    return {n // 2 for n in disturbed([probe for pair in pairs for probe in pair])}
