"""kafka-reassign-partitions' `--throttle`: before a reassignment starts, the replicas it moves are throttled (each
moving partition's current replicas on the leader side, the replicas it adds on the follower side) and every broker
involved gets the rate; `--verify` clears both once every reassignment of the file completed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from minikafka.client.dynamic_configs_command import BROKER, DELETE, SET, TOPIC
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.topic_config import (
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    THROTTLED_RATES,
)

Target = tuple[str, int, list[int]]  # a reassignment file's partition and its target replicas


@dataclass(frozen=True)
class Move:
    """One partition's move: its replicas now (the leader side's sources) and those it adds."""

    topic: str
    partition: int
    current: tuple[int, ...]
    adding: tuple[int, ...]


def moves(current: Mapping[tuple[str, int], list[int]], targets: Sequence[Target]) -> list[Move]:
    """The partitions of `targets` whose replicas change (Kafka's proposed move map), from their replicas now."""
    found = []
    for topic, partition, replicas in targets:
        now = current.get((topic, partition))
        if now is not None and now != replicas:
            found.append(Move(topic, partition, tuple(now), tuple(b for b in replicas if b not in now)))
    return found


def set_throttles(admin: Any, planned: Sequence[Move], rate: int) -> None:
    """The rate on every broker the moves touch and the moving replicas throttled on each topic."""
    from minikafka.pb import controller_pb2

    brokers = sorted({b for move in planned for b in (*move.current, *move.adding)})
    request = controller_pb2.AlterConfigsRequest(incremental=True)
    for broker in brokers:
        resource = request.resources.add()
        resource.resource.resource_type, resource.resource.resource_name = BROKER, str(broker)
        for name in THROTTLED_RATES:
            resource.configs.add(name=name, op=SET, value=str(rate))
    for topic in sorted({move.topic for move in planned}):
        mine = [move for move in planned if move.topic == topic]
        resource = request.resources.add()
        resource.resource.resource_type, resource.resource.resource_name = TOPIC, topic
        leader = ",".join(f"{m.partition}:{b}" for m in mine for b in m.current)
        follower = ",".join(f"{m.partition}:{b}" for m in mine for b in m.adding)
        resource.configs.add(name=LEADER_THROTTLED_REPLICAS, op=SET, value=leader)
        resource.configs.add(name=FOLLOWER_THROTTLED_REPLICAS, op=SET, value=follower)
    _check(admin.alter_configs(request))


def clear_throttles(admin: Any, brokers: Sequence[int], topics: Sequence[str]) -> None:
    """Kafka's --verify once the reassignments completed: the rates off `brokers`, the lists off `topics`."""
    from minikafka.pb import controller_pb2

    request = controller_pb2.AlterConfigsRequest(incremental=True)
    for kind, name, keys in [
        *((BROKER, str(b), THROTTLED_RATES) for b in brokers),
        *((TOPIC, t, (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS)) for t in topics),
    ]:
        resource = request.resources.add()
        resource.resource.resource_type, resource.resource.resource_name = kind, name
        for key in keys:
            resource.configs.add(name=key, op=DELETE)
    _check(admin.alter_configs(request))


def _check(results: Sequence[Any]) -> None:
    failed = [r for r in results if r.error_code != ErrorCode.NONE]
    if failed:
        raise KafkaError(ErrorCode.of(failed[0].error_code), f"throttle configs: {failed[0].error_message}")
