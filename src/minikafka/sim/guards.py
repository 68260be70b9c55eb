"""The cluster's data guards, as `--set` switches them: a seed run with one off is looking for the loss that guard
prevents, so a loss there after overlapping faults is explained (more replicas away than Kafka's promise allows)
only if the same seed with the guards on loses too."""

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


def guards_on(overrides: Mapping[str, str]) -> dict[str, str]:
    """`overrides` with every data guard it names at its guarded value."""
    values = dict(overrides)
    for guard in DATA_GUARDS:
        if guard.key in values:
            values[guard.key] = guard.on
    return values
