"""Baseline: what one wake-up costs on this machine, from 32-byte round trips over loopback TCP between two processes.

`measure()` starts `python benchmarks/loopback_round_trip.py serve PORT MODE` as a child that sends back every
message it reads, and times `round_trips` of them. With `mode="blocking"` both ends sleep in `recv` until the
other's message arrives, so each round trip carries two wake-ups of a sleeping process; with `mode="busy"` both ends
spin on a non-blocking socket and never sleep. The difference is the price of the wake-ups (in a virtual machine it
includes waking an idle virtual CPU). Every gRPC message minikafka sends wakes at least the receiver's gRPC poller
thread and then its event loop, and a batch produced with acks=all sends three times the messages of the echo
baseline (six against two).
"""

from __future__ import annotations

import socket
import sys
import time
from typing import Any

from child_server import serving

MESSAGE = b"x" * 32
MODES = ("blocking", "busy")


def _receive(sock: socket.socket) -> bytes:
    """One read; spins while nothing is there if the socket is non-blocking (busy mode)."""
    while True:
        try:
            data = sock.recv(64)
        except BlockingIOError:
            continue
        if not data:
            raise ConnectionError("the peer closed the connection")
        return data


def _configure(sock: socket.socket, mode: str) -> None:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setblocking(mode == "blocking")


def serve(port: int, mode: str) -> None:
    with socket.create_server(("127.0.0.1", port)) as listener:
        print("ready", flush=True)
        connection, _ = listener.accept()
    with connection:
        _configure(connection, mode)
        while True:
            try:
                data = _receive(connection)
            except ConnectionError:
                return
            connection.sendall(data)


def measure(port: int, round_trips: int = 20000, mode: str = "blocking") -> dict[str, Any]:
    """Microseconds per round trip of a 32-byte message (each is one `send` and one `recv` at each end)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    with serving(__file__, str(port), mode), socket.create_connection(("127.0.0.1", port)) as sock:
        _configure(sock, mode)
        for _ in range(min(1000, round_trips)):  # warm-up: connection and caches
            sock.sendall(MESSAGE)
            _receive(sock)
        started = time.perf_counter()
        for _ in range(round_trips):
            sock.sendall(MESSAGE)
            _receive(sock)
        elapsed = time.perf_counter() - started
    return {"mode": mode, "round_trips": round_trips, "us_per_round_trip": round(elapsed / round_trips * 1e6, 1)}


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3])
    else:
        from minikafka.deploy.local_cluster import free_ports

        for mode in MODES:
            print(measure(free_ports(1)[0], mode=mode))
