"""Baseline: a bare grpc.aio echo between two processes, the ceiling of minikafka's transport.

`python benchmarks/grpc_echo.py serve PORT` runs the server; `measure()` starts it as a child process and drives
it with `concurrency` requests in flight, each carrying `payload_size` bytes (and getting them back), either as
unary calls (`mode="unary"`, one call per request) or pipelined on one bidi stream (`mode="stream"`, how
minikafka's producer and follower fetchers send Produce and Fetch). Both ends run on uvloop, as minikafka does.
"""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported (common/grpc_environment.py)

# isort: split
import asyncio
import sys
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import grpc
from child_server import serving

from minikafka.common.cli_support import run_event_loop
from minikafka.common.grpc_support import GRPC_OPTIONS

UNARY_METHOD = "/bench.Echo/Echo"
STREAM_METHOD = "/bench.Echo/EchoStream"


async def serve(port: int) -> None:
    async def echo(request: bytes, _context: grpc.aio.ServicerContext) -> bytes:
        return request

    async def echo_stream(requests: AsyncIterator[bytes], _context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        async for request in requests:
            yield request

    handler = grpc.method_handlers_generic_handler(
        "bench.Echo",
        {
            "Echo": grpc.unary_unary_rpc_method_handler(echo),
            "EchoStream": grpc.stream_stream_rpc_method_handler(echo_stream),
        },
    )
    server = grpc.aio.server(options=GRPC_OPTIONS)
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()


async def _drive_unary(channel: grpc.aio.Channel, payload: bytes, concurrency: int, deadline: float) -> list[float]:
    call = channel.unary_unary(UNARY_METHOD)
    await call(payload)  # connect
    latencies: list[float] = []

    async def worker() -> None:
        while time.monotonic() < deadline:
            sent = time.monotonic()
            await call(payload)
            latencies.append((time.monotonic() - sent) * 1000)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


async def _drive_stream(channel: grpc.aio.Channel, payload: bytes, concurrency: int, deadline: float) -> list[float]:
    stream = channel.stream_stream(STREAM_METHOD)()
    await stream.write(payload)  # connect
    await stream.read()
    latencies: list[float] = []
    sent_at: deque[float] = deque()
    slots = asyncio.Semaphore(concurrency)

    async def write() -> None:
        while time.monotonic() < deadline:
            await slots.acquire()
            sent_at.append(time.monotonic())
            await stream.write(payload)
        await stream.done_writing()

    async def read() -> None:
        while (answer := await stream.read()) is not grpc.aio.EOF:
            assert len(answer) == len(payload)
            latencies.append((time.monotonic() - sent_at.popleft()) * 1000)
            slots.release()

    await asyncio.gather(write(), read())
    return latencies


async def _drive(port: int, payload_size: int, concurrency: int, duration_s: float, mode: str) -> dict[str, Any]:
    payload = b"x" * payload_size
    drive = _drive_stream if mode == "stream" else _drive_unary
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=GRPC_OPTIONS) as channel:
        started = time.monotonic()
        latencies = await drive(channel, payload, concurrency, started + duration_s)
        elapsed = time.monotonic() - started
    latencies.sort()
    calls = len(latencies)
    return {
        "mode": mode,
        "payload_size": payload_size,
        "concurrency": concurrency,
        "calls_per_s": round(calls / elapsed, 1),
        "mb_per_s": round(calls * payload_size / elapsed / 1024 / 1024, 2),
        "p50_ms": round(latencies[calls // 2], 3),
        "p99_ms": round(latencies[min(calls - 1, int(calls * 0.99))], 3),
    }


def measure(
    port: int, payload_size: int, concurrency: int, duration_s: float = 3.0, mode: str = "unary"
) -> dict[str, Any]:
    with serving(__file__, str(port)):
        return run_event_loop(_drive(port, payload_size, concurrency, duration_s, mode))


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        run_event_loop(serve(int(sys.argv[2])))
    else:
        from minikafka.deploy.local_cluster import free_ports

        size = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
        for mode in ("unary", "stream"):
            print(measure(free_ports(1)[0], size, 1, mode=mode))
