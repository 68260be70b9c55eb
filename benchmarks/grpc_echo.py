"""Baseline: a bare grpc.aio unary echo between two processes, the ceiling of minikafka's transport.

`python benchmarks/grpc_echo.py serve PORT` runs the server; `measure()` starts it as a child process and drives
it with `concurrency` calls in flight, each carrying `payload_size` bytes (and getting them back).
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import grpc

from common.grpc_support import GRPC_OPTIONS

METHOD = "/bench.Echo/Echo"


async def serve(port: int) -> None:
    async def echo(request: bytes, _context: grpc.aio.ServicerContext) -> bytes:
        return request

    handler = grpc.method_handlers_generic_handler("bench.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(echo)})
    server = grpc.aio.server(options=GRPC_OPTIONS)
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("ready", flush=True)
    await server.wait_for_termination()


async def _drive(port: int, payload_size: int, concurrency: int, duration_s: float) -> dict[str, Any]:
    payload = b"x" * payload_size
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}", options=GRPC_OPTIONS) as channel:
        call = channel.unary_unary(METHOD)
        await call(payload)  # connect
        latencies: list[float] = []
        deadline = time.monotonic() + duration_s

        async def worker() -> None:
            while time.monotonic() < deadline:
                sent = time.monotonic()
                await call(payload)
                latencies.append((time.monotonic() - sent) * 1000)

        started = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.monotonic() - started
    latencies.sort()
    calls = len(latencies)
    return {
        "payload_size": payload_size,
        "concurrency": concurrency,
        "calls_per_s": round(calls / elapsed, 1),
        "mb_per_s": round(calls * payload_size / elapsed / 1024 / 1024, 2),
        "p50_ms": round(latencies[calls // 2], 3),
        "p99_ms": round(latencies[min(calls - 1, int(calls * 0.99))], 3),
    }


def measure(port: int, payload_size: int, concurrency: int, duration_s: float = 3.0) -> dict[str, Any]:
    server = subprocess.Popen([sys.executable, __file__, "serve", str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        return asyncio.run(_drive(port, payload_size, concurrency, duration_s))
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        asyncio.run(serve(int(sys.argv[2])))
    else:
        from deploy.local_cluster import free_ports

        print(measure(free_ports(1)[0], int(sys.argv[1]) if len(sys.argv) > 1 else 16384, 1))
