"""The cluster's data guards, as `--set` switches them: a seed run with one off is looking for the loss that guard
prevents, so a loss there is reported as found, never explained away as more replicas away than Kafka's promise
allows (the same seed with the guard on tells whether the guard alone made the difference)."""

from __future__ import annotations

from collections.abc import Mapping

from minikafka.deploy.scenario import Guard
from minikafka.deploy.scenario.library import (
    controller_disk_loss,
    in_flight_alter_partition,
    kip_903,
    last_replica_standing,
    unclean_election,
)

DATA_GUARDS: tuple[Guard, ...] = (
    kip_903.GUARD,
    last_replica_standing.GUARD,
    unclean_election.GUARD,
    in_flight_alter_partition.GUARD,
    controller_disk_loss.GUARD,
)


def guards_off(*overrides: Mapping[str, str]) -> list[str]:
    """`key=value` of each data guard the configs set to anything but its guarded value."""
    found = []
    for guard in DATA_GUARDS:
        values = {config[guard.key] for config in overrides if guard.key in config}
        found += [f"{guard.key}={value}" for value in sorted(values) if value != guard.on]
    return found
