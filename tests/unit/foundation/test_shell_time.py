"""The shells read time, schedule, draw randomness and go off the event loop only through what a simulation controls:
the running event loop (`loop.time()`, `call_later`, `asyncio.sleep`, `run_in_executor(None, ...)`,
`asyncio.to_thread`) and `minikafka.common.clock` (`monotonic_ms`, `wall_ms`, `new_random`), which read the loop.
A virtual-time loop (minikafka.sim.virtual_loop) then drives the shipped shells. `asyncio.sleep` is allowed: its
time is the loop's. Pure cores are held to stricter rules by test_layering.py."""

from __future__ import annotations

import ast
from pathlib import Path

from source_trees import parse_file

SRC = Path(__file__).resolve().parents[3] / "src" / "minikafka"

# The node shells and what they share (client/ and deploy/ are tools outside the nodes).
SHELLS = ["broker", "kraft_controller", "storage", "common"]

# Calls that read the system's clock or randomness, or start threads, behind the loop's back.
FORBIDDEN = {
    "time": {"time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "sleep"},
    "random": None,  # any: shells take a `new_random()` source or an injected one
    "uuid": {"uuid1", "uuid4"},
    "os": {"urandom"},
    "secrets": None,
    "threading": {"Thread", "Timer"},
    "concurrent.futures": {"ThreadPoolExecutor", "ProcessPoolExecutor"},
    "asyncio": {"new_event_loop", "run", "get_event_loop"},
}

# What legitimately stays, by file and call, each with why.
ALLOWED = {
    # The seam itself: the system's clock and randomness where no simulated loop runs.
    "common/clock.py": {"time.monotonic", "time.time", "random.Random"},
    # Log event timestamps are wall time for the reader; no decision reads them.
    "common/event_log.py": {"time.time_ns"},
    # The transport's fault-injection cut check (a file's stat, rate-limited on the replication path): it goes
    # with the transport seam.
    "common/grpc_support.py": {"time.monotonic"},
    # Authentication nonces and session tokens must be unpredictable; no protocol decision depends on their value.
    "broker/grpc_sasl/authenticator.py": {"secrets.token_urlsafe"},
    "broker/kafka_wire/listener.py": {"secrets.token_urlsafe"},
}


def shell_files() -> list[Path]:
    return sorted(f for shell in SHELLS for f in (SRC / shell).rglob("*.py"))


def module_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> module, for `import x`, `import x as y` and `from concurrent import futures`."""
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                aliases[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in FORBIDDEN:
                    aliases[alias.asname or alias.name] = full
    return aliases


def imported_names(tree: ast.Module) -> list[str]:
    """`from time import monotonic` and the like: a forbidden call under a bare name."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in FORBIDDEN and node.level == 0:
            names = FORBIDDEN[node.module]
            found += [f"{node.module}.{a.name}" for a in node.names if names is None or a.name in names]
    return found


def dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def forbidden_calls(path: Path) -> set[str]:
    tree = parse_file(path)
    aliases = module_aliases(tree)
    found = set(imported_names(tree))
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted(node.func)
        if name is None or "." not in name:
            continue
        head, attr = name.rsplit(".", 1)
        module = aliases.get(head.split(".")[0], None)
        module = f"{module}{head[len(head.split('.')[0]) :]}" if module else None
        names = FORBIDDEN.get(module, ()) if module else ()
        if names is None or attr in (names or ()):
            found.add(f"{module}.{attr}")
        if attr == "run_in_executor" and node.args and not _is_none(node.args[0]):
            found.add("run_in_executor with an executor of its own")
    return found


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def test_shells_reach_time_randomness_and_threads_only_through_the_loop() -> None:
    offences = {}
    for path in shell_files():
        relative = str(path.relative_to(SRC))
        extra = forbidden_calls(path) - ALLOWED.get(relative, set())
        if extra:
            offences[relative] = sorted(extra)
    assert offences == {}


def test_every_allowance_is_still_needed() -> None:
    """An allowance whose call is gone goes too, so the list only shrinks."""
    stale = {
        relative: sorted(calls - forbidden_calls(SRC / relative))
        for relative, calls in ALLOWED.items()
        if not (SRC / relative).exists() or calls - forbidden_calls(SRC / relative)
    }
    assert stale == {}


def test_the_scan_sees_what_it_forbids(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import time, random as r, uuid, asyncio\n"
        "from concurrent import futures\n"
        "from time import monotonic\n"
        "async def f(loop):\n"
        "    time.monotonic(); r.randint(1, 2); uuid.uuid4(); futures.ThreadPoolExecutor()\n"
        "    await loop.run_in_executor(pool, f); await loop.run_in_executor(None, f)\n"
        "    await asyncio.sleep(1); await asyncio.to_thread(f); loop.time()\n"
    )
    assert forbidden_calls(sample) == {
        "time.monotonic",
        "random.randint",
        "uuid.uuid4",
        "concurrent.futures.ThreadPoolExecutor",
        "run_in_executor with an executor of its own",
    }
