"""A story of the logs a broker keeps on disk: moved away and deleted while it was offline (the steps of `scenario
stray-partitions`)."""

from __future__ import annotations

from typing import Any

from minikafka.broker.log_manager import partition_dirs, stray_reason
from minikafka.deploy.scenario.library import stray_partitions
from minikafka.kraft_controller.control.requests import DeleteTopicsRequest
from minikafka.sim.cluster import BROKER_IDS
from minikafka.sim.invariants import Violation
from minikafka.sim.story_steps import (
    events,
    image,
    isr_is,
    observe,
    on_active_controller,
    produce,
    reassign,
    refused,
    registration,
    scenario_story,
    start,
    stop,
    unfenced_anew,
    wait,
)
from minikafka.sim.world import TOPIC, TopicSpec, World

KEEPER, OFFLINE, OTHER = 1, 3, 2  # TOPIC-0 (the scenario's moved-0) on [KEEPER, OFFLINE], moved to [KEEPER, OTHER]
RECREATED = stray_partitions.RECREATED
RECREATED_SPEC = TopicSpec(1, ((OTHER, OFFLINE),), {"min.insync.replicas": "1"})


def stray_logs(w: World) -> list[str]:
    """Every broker's partition directories the committed metadata does not assign to it, with why (analyze's
    NoStrayPartitionLogs, by the brokers' own start-up rule)."""
    committed = image(w)
    return [
        f"broker {node_id} {tp}: {reason}"
        for node_id in BROKER_IDS
        for tp, path in partition_dirs(w.processes[node_id].data_dir)
        if (reason := stray_reason(tp, path, committed, node_id)) is not None
    ]


def _recreated(w: World) -> Any:
    found = image(w).topics_by_name.get(RECREATED)
    return None if found is None else found.partitions.get(0)


async def _delete_topic(w: World, name: str) -> None:
    """DeleteTopics on the active controller; waits until the committed metadata lacks the topic."""
    request = DeleteTopicsRequest((name,))
    what = f"delete topic {name}"
    answer = await on_active_controller(w, what, lambda state: state.delete_topics(request))
    refused(what, [topic.error_code for topic in answer.topics])
    await wait(w, f"the metadata no longer has {name}", lambda: name not in image(w).topics_by_name)


async def _create_topic(w: World, name: str, spec: TopicSpec) -> None:
    created = w._in_client(w._create_topic(name, spec))
    await wait(w, f"topic {name} created on {list(spec.assignment[0])}", created.done)


def _recreated_isr(w: World, isr: set[int]) -> bool:
    found = _recreated(w)
    return found is not None and set(found.isr) == isr


async def _stray_partitions(w: World) -> None:
    """OFFLINE stops while TOPIC-0 is moved off it and RECREATED is deleted and created again under a new topic id;
    nobody can tell it. Back, its start-up stray check deletes both stale logs, and it joins the new RECREATED-0's
    ISR. Without the check the logs stay on its disk, and the old RECREATED-0 directory (the old topic id) keeps it
    from hosting the new one (INCONSISTENT_TOPIC_ID): under-replicated while it runs."""
    await wait(w, f"broker {OFFLINE} joins {TOPIC}-0's ISR", lambda: isr_is(w, {KEEPER, OFFLINE}))
    await _create_topic(w, RECREATED, RECREATED_SPEC)
    await wait(w, f"broker {OFFLINE} joins {RECREATED}-0's ISR", lambda: _recreated_isr(w, {OTHER, OFFLINE}))
    observe(w, "acknowledged_before", await produce(w, 50, "moved"))
    old = image(w).topics_by_name[RECREATED].topic_id
    await stop(w, OFFLINE)
    await wait(w, f"the controller fences broker {OFFLINE}", lambda: bool((r := registration(w, OFFLINE)) and r.fenced))
    await reassign(w, (KEEPER, OTHER))
    await _delete_topic(w, RECREATED)
    await _create_topic(w, RECREATED, RECREATED_SPEC)
    observe(w, "new_topic_id", image(w).topics_by_name[RECREATED].topic_id != old)
    start(w, OFFLINE)
    await wait(w, f"broker {OFFLINE} catches up with the metadata, unfenced", lambda: unfenced_anew(w, OFFLINE))
    checked = ("stray_partition_deleted", "stray_partition_kept")
    await wait(w, "its start-up stray check on both logs", lambda: sum(len(events(w, e)) for e in checked) >= 2)
    observe(w, "stray_check", {e: sorted(x["partition"] for x in events(w, e)) for e in checked})
    if w.settings.overrides.get(stray_partitions.GUARD.key) == stray_partitions.GUARD.on:
        await wait(w, f"broker {OFFLINE} joins the new {RECREATED}-0's ISR", lambda: _recreated_isr(w, {2, 3}))
    else:
        await wait(w, "the old directory's topic id refused", lambda: bool(events(w, "partition_topic_id_mismatch")))
    now = _recreated(w)
    observe(w, "recreated_isr", sorted(now.isr) if now is not None else None)
    observe(w, "acknowledged_after", await produce(w, 20, "after"))
    stale = stray_logs(w)
    observe(w, "stray_logs", stale)
    if stale:
        w.violated(Violation("NoStrayPartitionLogs", "; ".join(stale)))


STRAY_PARTITIONS = scenario_story(
    stray_partitions,
    _stray_partitions,
    TopicSpec(1, ((KEEPER, OFFLINE),), {"min.insync.replicas": "1"}),
    watched=("stray_partition_deleted", "stray_partition_kept", "partition_topic_id_mismatch"),
)
