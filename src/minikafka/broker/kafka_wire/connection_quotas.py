"""Kafka's connection quotas (max.connections, max.connections.per.ip): how many client connections the broker
holds, in all and per IP address. Pure: the listener asks before it accepts and tells when a connection ends."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Admitted:
    pass


@dataclass(frozen=True)
class TooManyFromIp:
    """Past max.connections.per.ip: Kafka closes the new connection at once."""

    ip: str
    limit: int


Admission = Admitted | TooManyFromIp


def effective_max_connections(configured: int, open_files_limit: int | None) -> int:
    """max.connections, but never more than half the process's open-file limit: the other half stays for its
    logs, indexes, checkpoints and peer channels, so clients alone cannot exhaust its files."""
    if open_files_limit is None or open_files_limit <= 0:
        return configured
    return min(configured, open_files_limit // 2)


@dataclass
class ConnectionQuotas:
    max_connections: int
    max_connections_per_ip: int
    total: int = 0
    by_ip: dict[str, int] = field(default_factory=dict)

    def has_slot(self) -> bool:
        """Below max.connections: the listener may accept the next connection (Kafka's acceptor waits)."""
        return self.total < self.max_connections

    def admit(self, ip: str) -> Admission:
        if self.by_ip.get(ip, 0) >= self.max_connections_per_ip:
            return TooManyFromIp(ip, self.max_connections_per_ip)
        self.total += 1
        self.by_ip[ip] = self.by_ip.get(ip, 0) + 1
        return Admitted()

    def release(self, ip: str) -> None:
        self.total -= 1
        left = self.by_ip[ip] - 1
        if left:
            self.by_ip[ip] = left
        else:
            del self.by_ip[ip]
