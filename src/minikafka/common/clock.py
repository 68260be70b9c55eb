"""The shells' clock: monotonic milliseconds (pure cores never read it; the time is passed to them)."""

from __future__ import annotations

import time


def monotonic_ms() -> int:
    return int(time.monotonic() * 1000)
