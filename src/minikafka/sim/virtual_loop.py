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
import heapq
import itertools
import random
import selectors
import threading
from collections.abc import Callable, Coroutine
from contextvars import Context
from typing import Any, TypeVar, TypeVarTuple

from minikafka.common.node_environment import simulated_node, simulated_node_of
from minikafka.sim.disk import SlowSyncs

T = TypeVar("T")
Ts = TypeVarTuple("Ts")

# 2023-11-14T22:13:20Z: an arbitrary fixed epoch, so record timestamps and retention are the same every run.
WALL_START_S = 1_700_000_000.0
# asyncio's own limits (base_events): the longest select, and when cancelled timers are purged from the heap.
_MAXIMUM_SELECT_TIMEOUT_S = 24 * 3600
_MIN_SCHEDULED_TIMER_HANDLES = 100
_MIN_CANCELLED_TIMER_HANDLES_FRACTION = 0.5


class Deadlock(RuntimeError):
    """Nothing runnable, no timer, no I/O that could wake the loop: the simulation can never move on."""


class _JumpingSelector(selectors.BaseSelector):
    """Ready I/O (the loop's own wake-up pipe, in-memory sockets) is returned at once; where the loop would block
    until its next timer, the virtual clock jumps there instead. While the only file registered is the loop's
    wake-up pipe and nothing was written to it (`must_poll` says), there is nothing to ask the OS."""

    def __init__(self, advance: Callable[[float], None], must_poll: Callable[[int], bool]) -> None:
        self._real = selectors.DefaultSelector()
        self._advance = advance
        self._must_poll = must_poll
        self._registered = 0

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = self._real.register(fileobj, events, data)
        self._registered += 1
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        key = self._real.unregister(fileobj)
        self._registered -= 1
        return key

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def get_map(self) -> Any:
        return self._real.get_map()

    def close(self) -> None:
        self._real.close()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = self._real.select(0) if self._must_poll(self._registered) else []
        if ready or timeout == 0:
            return ready
        if timeout is None:
            raise Deadlock("no callback ready, no timer pending and no I/O ready")
        self._advance(timeout)
        return []


H = TypeVar("H", bound=asyncio.Handle)


def _handle(
    kind: type[H], callback: Callable[..., object], args: tuple[Any, ...], loop: Any, context: Context | None
) -> H:
    """What `asyncio.Handle.__init__` sets outside debug mode, without its frame and its `get_debug()` call: the loop
    makes some 2,000 handles per simulated second."""
    handle = object.__new__(kind)
    handle._context = contextvars.copy_context() if context is None else context  # type: ignore[attr-defined]
    handle._loop = loop  # type: ignore[attr-defined]
    handle._callback = callback  # type: ignore[attr-defined]
    handle._args = args
    handle._cancelled = False
    handle._repr = None  # type: ignore[attr-defined]
    handle._source_traceback = None  # type: ignore[attr-defined]
    return handle


class _Timer(asyncio.TimerHandle):
    """asyncio's TimerHandle, cancelled in one frame where asyncio's takes four: `asyncio.sleep` cancels the timer it
    armed once it wakes, fired or not, so nearly every timer is cancelled."""

    __slots__ = ()

    def cancel(self) -> None:
        if self._cancelled:
            return
        loop = self._loop  # type: ignore[attr-defined]
        if self._scheduled:  # type: ignore[attr-defined]  # still in the heap: BaseEventLoop._timer_handle_cancelled
            loop._timer_cancelled_count += 1
        self._cancelled = True
        if loop._debug:
            self._repr = repr(self)
        self._callback = None
        self._args = None  # type: ignore[assignment]


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """`seed` seeds `random`, the source `minikafka.common.clock.new_random` draws the shells' randomness from.

    Its timers are kept as (when, handle) pairs: tuples compare their float first, in C, where asyncio's handles
    compare in Python; two pairs compare as their handles do, so the heap orders them as asyncio's would."""

    _scheduled: list[tuple[float, asyncio.TimerHandle]]  # asyncio's heap of timers, here of pairs
    _timer_cancelled_count: int

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
        self._woken = False  # something was written to the loop's wake-up pipe since it was last polled
        super().__init__(_JumpingSelector(self._advance, self._must_poll))
        self.set_task_factory(_file_under_node)
        self.paused: set[int] = set()  # the simulated nodes (ids) whose callbacks are held, as SIGSTOP holds a process
        self._held: list[asyncio.Handle] = []
        self.slow_disks: dict[int, SlowSyncs] = {}  # by node id: its worker-thread fsyncs take seconds

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
                self._ready.append(handle)  # type: ignore[attr-defined]

    def _holds(self, handle: asyncio.Handle) -> bool:
        """A paused node's callback, come due: set aside until it resumes, in the order they came due."""
        if handle.cancelled():
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

    def _write_to_self(self) -> None:
        self._woken = True
        super()._write_to_self()  # type: ignore[misc]

    def _must_poll(self, registered: int) -> bool:
        """Files other than the wake-up pipe, a byte written to it, or signals that would write one."""
        woken, self._woken = self._woken, False
        return woken or registered > 1 or bool(self._signal_handlers)  # type: ignore[attr-defined]

    def call_soon(
        self, callback: Callable[[*Ts], object], *args: *Ts, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        if self._closed or self._debug:  # type: ignore[attr-defined]  # asyncio's checks: an error, or debug's
            return super().call_soon(callback, *args, context=context)
        handle = _handle(asyncio.Handle, callback, args, self, context)
        self._ready.append(handle)  # type: ignore[attr-defined]
        return handle

    def call_at(
        self, when: float, callback: Callable[[*Ts], object], *args: *Ts, context: contextvars.Context | None = None
    ) -> asyncio.TimerHandle:
        self._check_closed()  # type: ignore[attr-defined]
        if self.get_debug():
            self._check_thread()  # type: ignore[attr-defined]
            self._check_callback(callback, "call_at")  # type: ignore[attr-defined]
        return self._arm(when, callback, args, context)

    def call_later(
        self, delay: float, callback: Callable[[*Ts], object], *args: *Ts, context: contextvars.Context | None = None
    ) -> asyncio.TimerHandle:
        when = self._now + delay
        if self._closed or self._debug:  # type: ignore[attr-defined]  # call_at's checks: an error, or debug's
            return self.call_at(when, callback, *args, context=context)
        return self._arm(when, callback, args, context)

    def _arm(
        self, when: float, callback: Callable[..., object], args: tuple[Any, ...], context: contextvars.Context | None
    ) -> asyncio.TimerHandle:
        if self._debug:  # type: ignore[attr-defined]  # asyncio's constructor, which keeps where it was armed
            timer: asyncio.TimerHandle = _Timer(when, callback, args, self, context)
        else:
            timer = _handle(_Timer, callback, args, self, context)
        timer._when = when  # type: ignore[attr-defined]
        heapq.heappush(self._scheduled, (when, timer))
        timer._scheduled = True  # type: ignore[attr-defined]
        return timer

    def _run_once(self) -> None:
        """asyncio's turns (`BaseEventLoop._run_once`) on the pairs' heap until the loop is told to stop (asyncio's
        `run_forever` checks `_stopping` after each turn and nothing else), with the virtual clock's rule: a timer
        within the clock's resolution of now fires this turn; the clock moves to it first, or code reading the time
        after it fired would find itself still before it, and wait again for a moment the clock never reaches."""
        restore = _answer_running_loop_lookups(self)
        try:
            self._turns()
        finally:
            restore()

    def _turns(self) -> None:
        resolution: float = self._clock_resolution  # type: ignore[attr-defined]
        ready: collections.deque[asyncio.Handle] = self._ready  # type: ignore[attr-defined]
        popleft, heappop = ready.popleft, heapq.heappop
        selector: _JumpingSelector = self._selector  # type: ignore[attr-defined]
        while True:
            scheduled = self._scheduled
            if scheduled and scheduled[0][0] - self._now < resolution:
                self._now = max(self._now, scheduled[0][0])
            cancelled = self._timer_cancelled_count  # at least the cancelled timers still in the heap
            if cancelled and (
                (scheduled and scheduled[0][1]._cancelled) or len(scheduled) > _MIN_SCHEDULED_TIMER_HANDLES
            ):
                scheduled = self._drop_cancelled_timers(scheduled)
            idle = not ready and not self._stopping  # type: ignore[attr-defined]
            if self._woken or self._signal_handlers or selector._registered > 1:  # type: ignore[attr-defined]
                self._poll(selector, scheduled, idle)
            elif idle:  # nothing to poll: the selector's jump, without its frames
                if not scheduled:
                    raise Deadlock("no callback ready, no timer pending and no I/O ready")
                self._now += min(max(0, scheduled[0][0] - self._now), _MAXIMUM_SELECT_TIMEOUT_S)
            end_time = self._now + resolution
            while scheduled and scheduled[0][0] < end_time:
                timer = heappop(scheduled)[1]
                timer._scheduled = False  # type: ignore[attr-defined]
                ready.append(timer)
            # Only what is ready now; what these callbacks make ready runs next turn, after another poll.
            paused = self.paused
            for _ in range(len(ready)):
                handle = popleft()
                if handle._cancelled or (paused and self._holds(handle)):
                    continue
                try:  # Handle._run's body, without its frame
                    handle._context.run(handle._callback, *handle._args)  # type: ignore[attr-defined]
                except (SystemExit, KeyboardInterrupt):
                    raise
                except BaseException as error:  # noqa: BLE001 - to the exception handler, as Handle._run does
                    message = f"Exception in callback {handle._callback!r}"  # type: ignore[attr-defined]
                    self.call_exception_handler({"message": message, "exception": error, "handle": handle})
            if self._stopping:  # type: ignore[attr-defined]
                return

    def _poll(self, selector: _JumpingSelector, scheduled: list[tuple[float, asyncio.TimerHandle]], idle: bool) -> None:
        """asyncio's wait in its selector: at most until the next timer when nothing is ready, else not at all."""
        timeout = None
        if not idle:
            timeout = 0.0
        elif scheduled:
            timeout = min(max(0, scheduled[0][0] - self._now), _MAXIMUM_SELECT_TIMEOUT_S)
        events = selector.select(timeout)
        if events:
            self._process_events(events)  # type: ignore[attr-defined]

    def _drop_cancelled_timers(
        self, scheduled: list[tuple[float, asyncio.TimerHandle]]
    ) -> list[tuple[float, asyncio.TimerHandle]]:
        """asyncio's rule: every cancelled timer once they are most of many, else those at the heap's head."""
        count = len(scheduled)
        cancelled = self._timer_cancelled_count
        if count > _MIN_SCHEDULED_TIMER_HANDLES and cancelled / count > _MIN_CANCELLED_TIMER_HANDLES_FRACTION:
            kept = []
            for entry in scheduled:
                if entry[1]._cancelled:
                    entry[1]._scheduled = False  # type: ignore[attr-defined]
                else:
                    kept.append(entry)
            heapq.heapify(kept)
            self._scheduled = kept
            self._timer_cancelled_count = 0
            return kept
        while scheduled and scheduled[0][1]._cancelled:
            self._timer_cancelled_count -= 1
            heapq.heappop(scheduled)[1]._scheduled = False  # type: ignore[attr-defined]
        return scheduled

    def run_in_executor(self, executor: Any, func: Callable[[*Ts], T], *args: *Ts) -> asyncio.Future[T]:
        """Thread-pool work runs on the loop, not a thread: at once, or after a seeded latency when the loop was
        given one (an fsync's, so work handed to a pool, such as Raft's leader fsync, takes simulated time), longer
        on a node whose disk is slow (`slow_disks`: what a node hands its pool is its disk's work)."""
        future: asyncio.Future[T] = self.create_future()

        def run() -> None:
            if future.cancelled():
                return
            try:
                future.set_result(func(*args))
            except Exception as error:  # noqa: BLE001 - handed to the awaiting caller, as a pool's future would
                future.set_exception(error)

        node = simulated_node()
        slow = None if node is None else self.slow_disks.get(node.node_id)
        if self.executor_latency_ms is None and slow is None:
            run()
        else:
            latency = 0.0 if self.executor_latency_ms is None else self.random.uniform(*self.executor_latency_ms) / 1000
            self.call_later(latency + (0.0 if slow is None else slow.extra_s(self.time())), run)
        return future


def _answer_running_loop_lookups(loop: VirtualTimeLoop) -> Callable[[], None]:
    """While `loop` runs, asyncio's lookups of the running loop answer it from here in its own thread: CPython 3.11's
    ask getpid() (a system call) each time, and `asyncio.sleep`, queues, locks and the shells' clock ask some 2,000
    times per simulated second. Other threads, and this one once the loop stops, get what was there before. Returns
    what puts that back (unless another loop's lookups were installed meanwhile: these then pass calls on)."""
    get_ident = threading.get_ident
    before = asyncio.events._get_running_loop, asyncio.events.get_running_loop

    def _get_running_loop() -> asyncio.AbstractEventLoop | None:
        return loop if loop._thread_id == get_ident() else before[0]()  # type: ignore[attr-defined]

    def get_running_loop() -> asyncio.AbstractEventLoop:
        return loop if loop._thread_id == get_ident() else before[1]()  # type: ignore[attr-defined]

    _install(_get_running_loop, get_running_loop)

    def restore() -> None:
        if asyncio.events.get_running_loop is get_running_loop:
            _install(*before)

    return restore


def _install(get_running: Callable[[], Any], get_running_raising: Callable[[], Any]) -> None:
    for module in (asyncio, asyncio.events):  # the package re-exports them: callers look up either
        setattr(module, "_get_running_loop", get_running)  # noqa: B010 - a module's function, replaced
        setattr(module, "get_running_loop", get_running_raising)  # noqa: B010


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
