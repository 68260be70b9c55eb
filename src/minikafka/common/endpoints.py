"""Listener and quorum-voter strings in Kafka's formats."""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


def parse_host_port(text: str) -> tuple[str, int]:
    """`host:port` (or `[v6]:port`) as a pair; raises ValueError with the reason."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not host:
        raise ValueError(f"expected host:port, got {text!r}")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"bad port in {text!r}")
    return host.strip("[]"), int(port)


@functools.lru_cache(maxsize=64)
def parse_listeners(text: str) -> tuple[Listener, ...]:
    """`NAME://host:port,NAME2://host:port` as in Kafka's `listeners` (cached: fetchers ask on every fetch)."""
    listeners = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, rest = item.partition("://")
        if not sep or not name:
            raise ValueError(f"expected NAME://host:port, got {item!r}")
        host, port = parse_host_port(rest)
        listeners.append(Listener(name.upper(), host, port))
    if not listeners:
        raise ValueError("no listener given")
    names = [listener.name for listener in listeners]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate listener names in {text!r}")
    return tuple(listeners)


def parse_voters(text: str) -> dict[int, tuple[str, int]]:
    """`controller.quorum.voters`: `1@host:port,2@host:port` as {id: (host, port)}."""
    voters: dict[int, tuple[str, int]] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        node, sep, address = item.partition("@")
        if not sep or not node.strip().lstrip("-").isdigit():
            raise ValueError(f"expected id@host:port, got {item!r}")
        node_id = int(node)
        if node_id in voters:
            raise ValueError(f"voter {node_id} listed twice")
        voters[node_id] = parse_host_port(address)
    if not voters:
        raise ValueError("no voter given")
    return voters
