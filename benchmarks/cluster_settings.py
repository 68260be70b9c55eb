"""The local cluster every benchmark starts: failure detection a few seconds long, so a failover round is short."""

from __future__ import annotations

SETTINGS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "3000",
}
