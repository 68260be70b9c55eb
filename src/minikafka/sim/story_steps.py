"""What a scripted story is (`Story`, its guard's `Switch`), and the steps stories are written in: what they read
of the simulated cluster (the committed metadata, the replicas) and what they do to it (wait, produce, crash, start,
stop, reassign)."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field, replace
from types import ModuleType
from typing import Any, TypeVar

import grpc

from minikafka.client.producer import Producer, ProducerConfig, RecordMetadata
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.record_batch import Record, build_batch
from minikafka.deploy.scenario import Guard
from minikafka.kraft_controller.control.requests import AlterPartitionReassignmentsRequest, ReassignablePartition
from minikafka.kraft_controller.metadata.image import BrokerRegistration, MetadataImage, PartitionRegistration
from minikafka.pb import broker_pb2, broker_pb2_grpc
from minikafka.sim.clients import ClientMix
from minikafka.sim.cluster import CLIENT_ID, CONTROLLER_IDS, broker_address
from minikafka.sim.invariants import Violation
from minikafka.sim.world import TOPIC, SimulationResult, SimulationSettings, TopicSpec, Violated, World, simulate_seed

STEP_TIMEOUT_S = 30.0
T = TypeVar("T")


@dataclass(frozen=True)
class Switch:
    """How a story's guard is turned off: a config key's value, or a planted bug."""

    key: str  # a config key, or the planted bug's name
    on: str = ""
    off: str = ""
    planted_bug: bool = False

    def describe(self, guarded: bool) -> str:
        if self.planted_bug:
            return "guarded" if guarded else f"planted bug {self.key}"
        return f"{self.key}={self.on if guarded else self.off}"


def guard_switch(guard: Guard) -> Switch:
    """A `scenario` guard's config key and values, as a story's switch."""
    return Switch(guard.key, guard.on, guard.off)


@dataclass(frozen=True)
class Story:
    name: str
    title: str
    switch: Switch
    steps: Callable[[World], Awaitable[None]]
    topic: TopicSpec
    settings: Mapping[str, str] = field(default_factory=dict)  # every node's
    broker_settings: Mapping[str, str] = field(default_factory=dict)
    watched: tuple[str, ...] = ()
    dynamic_quorum: bool = False
    clients: ClientMix = ClientMix()  # what the world starts for them: Kafka listeners, transaction coordinators

    def settings_for(
        self, guarded: bool, seed: int = 1, overrides: Mapping[str, str] | None = None
    ) -> SimulationSettings:
        config = {**self.settings, **(overrides or {})}
        planted = None
        if self.switch.planted_bug:
            planted = None if guarded else self.switch.key
        else:
            config[self.switch.key] = self.switch.on if guarded else self.switch.off
        return SimulationSettings(
            seed,
            overrides=config,
            planted_bug=planted,
            topic=self.topic,
            broker_overrides=dict(self.broker_settings),
            watched_events=self.watched,
            keep_going=True,
            dynamic_quorum=self.dynamic_quorum,
            clients=self.clients,
        )


def scenario_story(
    scenario: ModuleType, steps: Callable[[World], Awaitable[None]], topic: TopicSpec, **more: Any
) -> Story:
    """The story of a `scenario` library module's steps: its name, title, guard and cluster settings (unless
    `settings` says others)."""
    settings = more.pop("settings", scenario.TOPOLOGY.settings)
    return Story(scenario.NAME, scenario.TITLE, guard_switch(scenario.GUARD), steps, topic, settings=settings, **more)


def run_story(
    story: Story, guarded: bool, seed: int = 1, overrides: Mapping[str, str] | None = None
) -> SimulationResult:
    settings = story.settings_for(guarded, seed, overrides)
    return simulate_seed(settings, story.steps)


# ---- what a story reads of the cluster ----


def image(w: World) -> MetadataImage:
    """The committed metadata of the controller that replayed the most."""
    controllers = [w.processes[c].parts.get("controller") for c in CONTROLLER_IDS]
    running = [c for c in controllers if c is not None]
    if not running:
        return MetadataImage()
    return max(running, key=lambda c: c.replayed_offset).state.committed


def partition(w: World, index: int = 0) -> PartitionRegistration | None:
    found = image(w).topics_by_name.get(TOPIC)
    return None if found is None else found.partitions.get(index)


def registration(w: World, broker_id: int) -> BrokerRegistration | None:
    return image(w).broker(broker_id)


def broker(w: World, broker_id: int) -> Any:
    return w.processes[broker_id].parts.get("broker")


def release_held_alter_partitions(w: World, broker_id: int) -> None:
    """The broker sends the AlterPartition requests it holds, as its own `fault` handler would; what it proposes
    next is held."""
    manager = broker(w, broker_id).manager.alter_partition
    w.processes[broker_id].run_as(manager.release, keep_holding=True)


async def release_stale_alter_partition(w: World, broker_id: int, name: str) -> None:
    """Send the AlterPartition `broker_id` (the story's `name` for it) holds, and wait until the controller accepted
    or rejected it."""

    def answered() -> int:
        return len(events(w, "alter_partition_accepted")) + len(events(w, "alter_partition_rejected"))

    before = answered()
    release_held_alter_partitions(w, broker_id)
    await wait(w, f"the controller answers {name}'s stale AlterPartition", lambda: answered() > before)


def local_log_end(w: World, broker_id: int, index: int = 0) -> int:
    found = [r for r in w.replicas() if r.broker == broker_id and r.partition == index]
    return found[0].log_end_offset if found else -1


def leads(w: World, broker_id: int, index: int = 0) -> bool:
    registered = partition(w, index)
    return registered is not None and registered.leader == broker_id and local_leader(w, broker_id, index)


def local_leader(w: World, broker_id: int, index: int = 0) -> bool:
    return any(r.leads for r in w.replicas() if r.broker == broker_id and r.partition == index)


def isr_is(w: World, isr: set[int], index: int = 0) -> bool:
    registered = partition(w, index)
    return registered is not None and set(registered.isr) == isr


def events(w: World, name: str) -> list[dict[str, Any]]:
    return w.trace.watched.get(name, [])


# ---- what a story does ----


async def wait(w: World, what: str, condition: Callable[[], bool], timeout_s: float = STEP_TIMEOUT_S) -> None:
    """Run the cluster until `condition`, the invariants checked all along; a story that stalls is a failure."""
    w.step = what
    w.note(f"wait: {what}")
    if not await w.run_until(condition, timeout_s):
        raise Violated(Violation("StoryStalled", f"not reached in {timeout_s:.0f} simulated s: {what}"))


async def in_client(w: World, what: str, coroutine: Coroutine[Any, Any, T], timeout_s: float = STEP_TIMEOUT_S) -> T:
    """Run `coroutine` as a client of the cluster (on the simulated network) until it returns; its result."""
    task = w._in_client(coroutine)
    await wait(w, what, task.done, timeout_s)
    result: T = task.result()
    return result


async def produce(w: World, count: int, prefix: str, index: int = 0, timeout_s: float = STEP_TIMEOUT_S) -> int:
    """acks=all writes of unique values, one batch each and one at a time; how many were acknowledged (those
    refused, e.g. NOT_ENOUGH_REPLICAS until the delivery timeout, are not)."""
    before = w.acked
    task = w._in_client(send_writes(w, count, prefix, index))
    await wait(w, f"{count} acks=all writes to {TOPIC}-{index}", task.done, timeout_s + count * 5)
    task.result()
    return w.acked - before


async def send_writes(w: World, count: int, prefix: str, index: int, retries: bool = True) -> None:
    config = ProducerConfig(acks=-1, linger_ms=0, request_timeout_ms=2000, delivery_timeout_ms=4000)
    if not retries:  # a write sent once: it may land in one leader's log and never be acknowledged
        config = replace(config, retries=0, enable_idempotence=False)
    producer = Producer([broker_address(b) for b in w.processes if not w.processes[b].controller], config)
    try:
        for sequence in range(count):
            value = f"{prefix}{sequence}".encode()
            try:
                future = await producer.send(TOPIC, value, partition=index)
            except KafkaError:
                continue
            done: asyncio.Future[RecordMetadata] = future
            await asyncio.wait({done})
            w._acknowledged(value, done)
    finally:
        await producer.close()


async def crash(w: World, node_id: int, power_loss: bool = False, wipe_disk: bool = False) -> None:
    w.note(f"crash {node_id} power_loss={power_loss} wipe_disk={wipe_disk}")
    await w.processes[node_id].crash(power_loss=power_loss)
    if wipe_disk:
        shutil.rmtree(w.processes[node_id].data_dir, ignore_errors=True)


def start(w: World, node_id: int) -> None:
    w.note(f"start {node_id}")
    w.processes[node_id].start()


async def stop(w: World, node_id: int) -> None:
    """A clean stop (SIGTERM): the controlled shutdown, the logs flushed."""
    w.note(f"stop {node_id}")
    await w.processes[node_id].stop()


@dataclass(frozen=True)
class Answer:
    """A raw Produce's answer: its error, and the base offset it was written at (-1 if it was not)."""

    error: ErrorCode
    offset: int


async def produce_raw(w: World, broker_id: int, value: bytes, acks: int, timeout_s: float = 1.0) -> Answer:
    """One record straight to `broker_id` (no client retries or metadata), as a scenario's `produce_raw` sends it;
    acks=all ones acknowledged are counted by the invariants."""
    task = w._in_client(_send_raw(w, broker_id, value, acks, timeout_s))
    await wait(w, f"broker {broker_id} answers a produce of {value.decode()}", task.done, timeout_s + 5)
    answer: Answer = task.result()
    if answer.error is ErrorCode.NONE and acks == -1:
        w._acknowledged_at(0, answer.offset, value)
    return answer


async def _send_raw(w: World, broker_id: int, value: bytes, acks: int, timeout_s: float) -> Answer:
    request = broker_pb2.ProduceRequest(acks=acks, timeout_ms=int(timeout_s * 1000))
    request.topic_data.add(name=TOPIC).partition_data.add(index=0, records=build_batch([Record(value)]))
    stub = broker_pb2_grpc.BrokerStub(w.network.channel(CLIENT_ID, broker_address(broker_id)))
    try:
        answer = await stub.Produce(request, timeout=timeout_s + 2)
    except grpc.RpcError as error:
        timed_out = error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        return Answer(ErrorCode.REQUEST_TIMED_OUT if timed_out else ErrorCode.NETWORK_EXCEPTION, -1)
    result = answer.responses[0].partition_responses[0]
    return Answer(ErrorCode.of(result.error_code), result.base_offset)


def leader_values(w: World, index: int = 0) -> dict[int, bytes]:
    """offset -> value of what the partition's newest leader holds below its high watermark (nothing: no leader)."""
    leaders = [r for r in w.replicas() if r.leads and r.partition == index]
    if not leaders:
        return {}
    leader = max(leaders, key=lambda r: r.leader_epoch)
    return leader.read(0, leader.high_watermark)


def now() -> float:
    """The simulated time."""
    return asyncio.get_running_loop().time()


def observe(w: World, key: str, value: Any) -> None:
    w.observed[key] = value
    w.note(f"observed {key}={value}")


def unfenced_anew(w: World, broker_id: int) -> bool:
    """Registered again, unfenced, as the incarnation running now."""
    registered, running = registration(w, broker_id), broker(w, broker_id)
    return (
        registered is not None
        and running is not None
        and not registered.fenced
        and registered.incarnation_id == running.lifecycle.incarnation_id
    )


def led_with(w: World, member: int) -> bool:
    registered = partition(w)
    return (
        registered is not None
        and registered.leader >= 0
        and member in registered.isr
        and local_leader(w, registered.leader)
    )


def raft_leader(w: World) -> int | None:
    leaders = [n for n in w.raft_nodes() if n.leads]
    return max(leaders, key=lambda n: n.epoch).node if leaders else None


async def on_active_controller(w: World, what: str, operation: Callable[[Any], Any]) -> Any:
    """`operation` on the active controller's state machine, submitted as its service submits a request; its
    answer."""
    await wait(w, "an active controller", lambda: active_controller(w) is not None)
    node = active_controller(w)
    assert node is not None
    controller = w.processes[node].parts["controller"]
    w.note(what)
    submitted = w.processes[node].run_as(asyncio.ensure_future, controller.submit(lambda: operation(controller.state)))
    await wait(w, f"{what}: answered", submitted.done)
    return submitted.result()


def refused(what: str, errors: list[ErrorCode]) -> None:
    """A story's request to the controller was refused: it cannot go on (StoryStalled)."""
    if any(error is not ErrorCode.NONE for error in errors):
        raise Violated(Violation("StoryStalled", f"{what}: refused {[error.name for error in errors]}"))


async def reassign(w: World, replicas: tuple[int, ...], index: int = 0) -> None:
    """AlterPartitionReassignments on the active controller; waits until it completed."""
    request = AlterPartitionReassignmentsRequest((ReassignablePartition(TOPIC, index, replicas),))
    what = f"reassign {TOPIC}-{index} to {list(replicas)}"
    answer = await on_active_controller(w, what, lambda state: state.alter_partition_reassignments(request))
    refused(what, [result.error_code for result in answer.results])

    def completed() -> bool:
        registered = partition(w, index)
        return registered is not None and tuple(registered.replicas) == replicas

    await wait(w, f"replicas {list(replicas)}", completed)


def active_controller(w: World) -> int | None:
    active = [c for c in CONTROLLER_IDS if (found := w.processes[c].parts.get("controller")) and found.active]
    return active[0] if active else None
