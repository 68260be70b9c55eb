"""The replication throttle on the shipped brokers, in simulated time: a replica a reassignment adds catches up at
about the throttled rate, where it catches up at once without one; with only the leader's side or only the
follower's throttled, each side alone holds it back; a replica in the ISR is never held back."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

import pytest

from minikafka.kraft_controller.control.config_control import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from minikafka.sim.story_steps import (
    events,
    isr_is,
    now,
    observe,
    on_active_controller,
    produce,
    reassign,
    refused,
    wait,
)
from minikafka.sim.world import TOPIC, SimulationResult, SimulationSettings, TopicSpec, World, simulate_seed

RECORDS = 150
RATE = 1000  # bytes a second
BOTH = {"leader.replication.throttled.replicas": "*", "follower.replication.throttled.replicas": "0:3"}
RATES = {"leader.replication.throttled.rate": str(RATE), "follower.replication.throttled.rate": str(RATE)}
BROKER = 4  # Kafka's ConfigResource.Type


async def _set_rates(w: World, rates: Mapping[str, str]) -> None:
    """The rates as the cluster-wide dynamic broker default (they are dynamic configs only, as in Kafka)."""
    if not rates:
        return
    configs = tuple(AlterableConfig(k, AlterConfigOp.SET, v) for k, v in rates.items())
    request = AlterConfigsRequest((AlterConfigsResource(BROKER, "", configs),))
    answer = await on_active_controller(w, "the throttled rates", lambda state: state.alter_configs(request))
    refused("the throttled rates", [result.error_code for result in answer.results])


def _adding_a_replica(rates: Mapping[str, str]) -> Callable[[World], Awaitable[None]]:
    async def steps(w: World) -> None:
        """Writes to the partition on brokers 1 and 2, then a reassignment adding broker 3: how long 3 took to
        join the ISR."""
        await _set_rates(w, rates)
        await _add_a_replica(w)

    return steps


async def _add_a_replica(w: World) -> None:
    await produce(w, RECORDS, "throttled-")
    started = now()
    await reassign(w, (1, 2, 3))
    await wait(w, "broker 3 in the ISR", lambda: isr_is(w, {1, 2, 3}), timeout_s=120)
    observe(w, "catch_up_s", now() - started)


def _run(topic_configs: Mapping[str, str], broker_configs: Mapping[str, str]) -> SimulationResult:
    topic = TopicSpec(partitions=1, assignment=((1, 2),), configs={"min.insync.replicas": "1", **topic_configs})
    # One small batch a Fetch, so catching up takes many Fetches and the rate is measured on the way.
    brokers = {"replica.fetch.max.bytes": "1"}
    settings = SimulationSettings(1, faults=(), topic=topic, broker_overrides=brokers, keep_going=True)
    result = simulate_seed(settings, _adding_a_replica(broker_configs))
    assert result.violation is None, "\n".join(result.trace)
    return result


@pytest.fixture(scope="module")
def unthrottled() -> SimulationResult:
    return _run({}, {})


def test_without_a_throttle_the_new_replica_catches_up_at_once(unthrottled: SimulationResult) -> None:
    assert unthrottled.observed["catch_up_s"] < 3.0, unthrottled.observed


def test_the_rates_alone_throttle_no_replica() -> None:
    assert _run({}, RATES).observed["catch_up_s"] < 3.0


@pytest.mark.parametrize(
    "topic_configs",
    [BOTH, {"leader.replication.throttled.replicas": "*"}, {"follower.replication.throttled.replicas": "0:3"}],
    ids=["both sides", "the leader's side", "the follower's side"],
)
def test_a_throttled_replica_out_of_the_isr_catches_up_at_about_the_rate(topic_configs: Mapping[str, str]) -> None:
    result = _run(topic_configs, RATES)
    bytes_behind = RECORDS * 70  # each write one batch of 61 bytes of overhead and a short value
    assert result.observed["catch_up_s"] >= bytes_behind / RATE / 2, result.observed


def test_the_throttle_does_not_hold_back_replicas_in_the_isr() -> None:
    """Brokers 1 and 2 throttled both ways from the start: the writes are acknowledged by both as fast as ever
    (the producer's delivery timeout would fail them otherwise), and the throttle is logged as set."""

    async def writes(w: World) -> None:
        await _set_rates(w, RATES)
        await produce(w, RECORDS, "in-sync-")
        observe(
            w, "throttles", [(e["side"], e["rate"], e["topics"]) for e in events(w, "replication_throttle_changed")]
        )

    topic = TopicSpec(partitions=1, assignment=((1, 2),), configs={"min.insync.replicas": "2", **BOTH})
    settings = SimulationSettings(
        1,
        faults=(),
        topic=topic,
        broker_overrides={"replica.fetch.max.bytes": "1"},
        keep_going=True,
        watched_events=("replication_throttle_changed",),
    )
    result = simulate_seed(settings, writes)
    assert result.violation is None, "\n".join(result.trace)
    assert result.acknowledged == RECORDS
    assert ("leader", RATE, {TOPIC: "*"}) in result.observed["throttles"]
