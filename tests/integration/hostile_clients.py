"""Raw clients a hostile user would write, and what a test reads of a broker process (open files, memory)."""

from __future__ import annotations

import json
import os
import socket
import struct
from pathlib import Path

API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 7, -1)  # header v1: key, version, correlation id, null client id


def api_versions_frame() -> bytes:
    return struct.pack(">i", len(API_VERSIONS_V0)) + API_VERSIONS_V0


def connect_from(source_ip: str, address: str, timeout_s: float = 10) -> socket.socket:
    """A TCP connection to `address` from `source_ip` (any 127.x.y.z on Linux): one more client IP on loopback."""
    host, _, port = address.rpartition(":")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.settimeout(timeout_s)
    sock.bind((source_ip, 0))
    sock.connect((host, int(port)))
    return sock


def closed_by_peer(sock: socket.socket) -> bool:
    """True once the broker has closed `sock` (reads EOF or a reset); False while it is open and silent."""
    sock.setblocking(False)
    try:
        return sock.recv(1 << 16) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True


def answers_api_versions(sock: socket.socket) -> bool:
    """Sends ApiVersions v0 and reads the answer's correlation id; False when the broker closed the connection."""
    sock.settimeout(30)
    try:
        sock.sendall(api_versions_frame())
        size = struct.unpack(">i", _exactly(sock, 4))[0]
        return struct.unpack(">i", _exactly(sock, size)[:4])[0] == 7
    except (ConnectionError, EOFError):
        return False


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmRSS for {pid}")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def events(path: Path, name: str) -> list[dict]:
    if not path.exists():
        return []
    found = []
    for line in path.read_text().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if event.get("event") == name:
            found.append(event)
    return found
