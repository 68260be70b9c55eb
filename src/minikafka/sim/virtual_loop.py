"""An asyncio event loop on virtual time, to run the shipped asyncio shells in a simulation.

Its `time()` is a virtual clock: when nothing is runnable and no I/O is ready, the clock jumps to the next timer
instead of sleeping, so simulated minutes pass in milliseconds and every run with the same seed is the same run.
The shells read time, schedule and go off the loop only through the loop (`loop.time()` via
`minikafka.common.clock`, `call_later`, `asyncio.sleep`, `run_in_executor`/`asyncio.to_thread`), so they run on it
unchanged. Work for a thread pool runs inline. It also carries what `minikafka.common.clock` reads for wall time
(`wall_time()`) and randomness (`random`). Every task it creates is filed under the simulated node whose context
created it, so a simulated crash can end all of them."""

from __future__ import annotations

import asyncio
import collections
import contextvars
import itertools
import random
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar, TypeVarTuple

from minikafka.common.node_environment import simulated_node, simulated_node_of

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

# 2023-11-14T22:13:20Z: an arbitrary fixed epoch, so record timestamps and retention are the same every run.
WALL_START_S = 1_700_000_000.0


class Deadlock(RuntimeError):
    """Nothing runnable, no timer, no I/O that could wake the loop: the simulation can never move on."""


class _JumpingSelector(selectors.BaseSelector):
    """Ready I/O (the loop's own wake-up pipe, in-memory sockets) is returned at once; where the loop would block
    until its next timer, the virtual clock jumps there instead."""

    def __init__(self, advance: Callable[[float], None]) -> None:
        self._real = selectors.DefaultSelector()
        self._advance = advance

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def get_map(self) -> Any:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Deadlock("no callback ready, no timer pending and no I/O ready")
        self._advance(timeout)
        return []


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """`seed` seeds `random`, the source `minikafka.common.clock.new_random` draws the shells' randomness from."""

    def __init__(
        self,
        seed: int = 0,
        start_s: float = 0.0,
        wall_start_s: float = WALL_START_S,
        executor_latency_ms: tuple[float, float] | None = None,
    ) -> None:
        self.executor_latency_ms = executor_latency_ms
        self._now = start_s
        self._wall_offset = wall_start_s - start_s
        self.random = random.Random(seed)
        super().__init__(_JumpingSelector(self._advance))
        self.set_task_factory(_file_under_node)
        self.paused: set[int] = set()  # the simulated nodes (ids) whose callbacks are held, as SIGSTOP holds a process
        self._held: list[asyncio.Handle] = []
        self._ready = _Ready(self)

    def pause(self, node_id: int) -> None:
        """Nothing of the node runs (its timers, its I/O, its handlers of others' calls) until `resume`."""
        self.paused.add(node_id)

    def resume(self, node_id: int) -> None:
        self.paused.discard(node_id)
        held, self._held = self._held, []
        for handle in held:
            if simulated_node_of(handle._context).node_id in self.paused:  # type: ignore[attr-defined, union-attr]
                self._held.append(handle)
            else:
                self._ready.append(handle)

    def _holds(self, handle: asyncio.Handle) -> bool:
        if not self.paused or handle.cancelled():
            return False
        node = simulated_node_of(handle._context)  # type: ignore[attr-defined]
        if node is None or node.node_id not in self.paused:
            return False
        self._held.append(handle)
        return True

    def time(self) -> float:
        return self._now

    def wall_time(self) -> float:
        """Epoch seconds, moving with the virtual clock (`minikafka.common.clock.wall_ms` reads it)."""
        return self._wall_offset + self._now

    def _advance(self, seconds: float) -> None:
        self._now += seconds

    def _run_once(self) -> None:
        """A timer within the clock's resolution of now fires this turn (asyncio's rule); the clock moves to it
        first, or code reading the time after it fired would find itself still before it, and wait again for a
        moment the clock never reaches."""
        scheduled = self._scheduled  # type: ignore[attr-defined]
        if scheduled and scheduled[0].when() - self._now < self._clock_resolution:  # type: ignore[attr-defined]
            self._now = max(self._now, scheduled[0].when())
        super()._run_once()  # type: ignore[misc]

    def run_in_executor(self, executor: Any, func: Callable[[*Ts], T], *args: *Ts) -> asyncio.Future[T]:
        """Thread-pool work runs on the loop, not a thread: at once, or after a seeded latency when the loop was
        given one (an fsync's, so work handed to a pool, such as Raft's leader fsync, takes simulated time)."""
        future: asyncio.Future[T] = self.create_future()

        def run() -> None:
            if future.cancelled():
                return
            try:
                future.set_result(func(*args))
            except Exception as error:  # noqa: BLE001 - handed to the awaiting caller, as a pool's future would
                future.set_exception(error)

        if self.executor_latency_ms is None:
            run()
        else:
            self.call_later(self.random.uniform(*self.executor_latency_ms) / 1000, run)
        return future


class _Ready(collections.deque[asyncio.Handle]):
    """The loop's ready queue: a paused node's callbacks are set aside as they come due (a cancelled stand-in is
    run in their place) and run again once it resumes, in the order they came due."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        super().__init__()
        self._loop = loop
        self._skip = asyncio.Handle(lambda: None, (), loop)
        self._skip.cancel()

    def popleft(self) -> asyncio.Handle:
        handle = super().popleft()
        return self._skip if self._loop._holds(handle) else handle


_CREATED = itertools.count()


def _file_under_node(
    loop: asyncio.AbstractEventLoop, coroutine: Any, context: contextvars.Context | None = None
) -> asyncio.Task[Any]:
    task = asyncio.Task(coroutine, loop=loop, context=context)
    task.sim_order = next(_CREATED)  # type: ignore[attr-defined]  # creation order, for a crash's replayable order
    node = simulated_node() if context is None else simulated_node_of(context)
    if node is not None:
        node.tasks.add(task)
        if node.ended:
            task.cancel()
    return task


def run_virtual(main: Coroutine[Any, Any, T], seed: int = 0, start_s: float = 0.0) -> T:
    """Run `main` to its end on a fresh virtual-time loop."""
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(seed, start_s)) as runner:
        return runner.run(main)
