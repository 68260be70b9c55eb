"""The shells' time and randomness, read from the running event loop (pure cores never read them; the time is passed
to them). Production runs on uvloop or asyncio, whose loop clock is the system's monotonic clock; a simulation runs
the same shells on an event loop with a virtual clock, which may also carry `wall_time()` and a seeded `random`."""

from __future__ import annotations

import asyncio
import random
import time


def monotonic_ms() -> int:
    """The running loop's clock, so timers (`call_later`, `asyncio.sleep`) and deadlines agree; off the loop (a
    worker thread, a synchronous caller) the monotonic clock the production loops use."""
    loop = asyncio._get_running_loop()  # noqa: SLF001 - None off the loop, without get_running_loop's exception
    return int((loop.time() if loop is not None else time.monotonic()) * 1000)


def client_monotonic_s(loop: asyncio.AbstractEventLoop | None = None) -> float:
    """A client's clock: the monotonic clock, or a simulated loop's (one with `wall_time()`) virtual one. Clients
    keep the precise clock in production, where loop clocks (uvloop's) tick in whole milliseconds. `loop`: the
    running loop when the caller has it (looking it up costs a getpid system call on CPython 3.11)."""
    loop = loop if loop is not None else asyncio._get_running_loop()  # noqa: SLF001
    return loop.time() if loop is not None and hasattr(loop, "wall_time") else time.monotonic()


def wall_ms(loop: asyncio.AbstractEventLoop | None = None) -> int:
    """Epoch milliseconds for protocol decisions on timestamps (retention): a simulated loop's `wall_time()`.
    `loop`: the running loop when the caller has it."""
    wall_time = getattr(loop if loop is not None else asyncio._get_running_loop(), "wall_time", None)  # noqa: SLF001
    return int((wall_time() if wall_time is not None else time.time()) * 1000)


def new_random() -> random.Random:
    """A random source for a shell: drawn from a simulated loop's seeded `random`, from the OS otherwise."""
    seeded = getattr(asyncio._get_running_loop(), "random", None)  # noqa: SLF001
    return random.Random(seeded.getrandbits(64)) if isinstance(seeded, random.Random) else random.Random()
