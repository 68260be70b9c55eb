"""`slow-disk`: a node's fsyncs (the work it hands to a thread pool) take seconds until the fault heals, and the
story `raft-slow-disk` shows what that opens: a Raft leader counting its own unfsynced entries (the planted
`raft-counts-unflushed`) commits entries its power loss takes away; the shipped durability gate keeps them."""

from __future__ import annotations

import asyncio
import contextvars
import random
import re
import shlex
from dataclasses import replace

import pytest

from minikafka.cli import main
from minikafka.common.node_environment import SimulatedNode, enter_simulated_node
from minikafka.sim.disk import SimDisk, SlowSyncs
from minikafka.sim.network import SimNetwork
from minikafka.sim.stories import RAFT_POWER_LOSS, RAFT_SLOW_DISK
from minikafka.sim.story_steps import Switch, run_story
from minikafka.sim.virtual_loop import VirtualTimeLoop
from minikafka.sim.world import FSYNC_LATENCY_MS, SLOW_FSYNC_S

SLOW, HEALTHY = 1, 2
SLOW_UNTIL_S = 3.0


def _node_context(node_id: int) -> contextvars.Context:
    context = contextvars.Context()
    context.run(enter_simulated_node, SimulatedNode(node_id, SimNetwork(random.Random(0)), SimDisk()))
    return context


async def _fsync_times(loop: VirtualTimeLoop) -> dict[int, list[float]]:
    """Each node hands five fsyncs to its pool; how long each took (simulated s)."""
    loop.slow_disks[SLOW] = SlowSyncs(loop.time() + SLOW_UNTIL_S, random.Random(7), SLOW_FSYNC_S)
    took: dict[int, list[float]] = {SLOW: [], HEALTHY: []}

    async def fsync(node_id: int) -> None:
        started = loop.time()
        await asyncio.to_thread(lambda: None)
        took[node_id].append(loop.time() - started)

    tasks = [loop.create_task(fsync(n), context=_node_context(n)) for n in (SLOW, HEALTHY) for _ in range(5)]
    await asyncio.gather(*tasks)
    return took


def test_a_slow_disk_holds_its_nodes_fsyncs_for_seconds_but_not_past_its_end() -> None:
    with asyncio.Runner(loop_factory=lambda: VirtualTimeLoop(1, executor_latency_ms=FSYNC_LATENCY_MS)) as runner:
        loop = runner.get_loop()
        assert isinstance(loop, VirtualTimeLoop)
        took = runner.run(_fsync_times(loop))
    fastest, slowest = FSYNC_LATENCY_MS[0] / 1000, FSYNC_LATENCY_MS[1] / 1000
    assert all(fastest <= t <= slowest for t in took[HEALTHY]), took
    assert all(SLOW_FSYNC_S[0] <= t <= SLOW_UNTIL_S + slowest for t in took[SLOW]), took
    assert any(t >= SLOW_UNTIL_S for t in took[SLOW]), took  # a drawn delay past the end completes at the end


def test_the_durability_gate_keeps_what_a_slow_leader_commits_through_its_power_loss() -> None:
    result = run_story(RAFT_SLOW_DISK, guarded=True)
    assert [v.invariant for v in result.violations] == [], result.trace
    assert result.observed["entries_c_lacks"] > 0
    assert result.observed["raft_leader_while_f_cut_off"] != result.observed["lagging_controller"]


def test_a_slow_leader_counting_its_unflushed_entries_loses_committed_ones_with_its_power() -> None:
    result = run_story(RAFT_SLOW_DISK, guarded=False)
    # L restarted without them, and C never had them: whichever of the two leads lacks committed entries
    assert "LeaderHasAllAckedValues" in [v.invariant for v in result.violations], result.trace


def test_without_the_slow_disk_the_same_steps_miss_the_open_gate() -> None:
    """The leader's fsync lands milliseconds after its append, long before its power loss: nothing is lost."""
    story = replace(RAFT_POWER_LOSS, switch=Switch("raft-counts-unflushed", planted_bug=True))
    result = run_story(story, guarded=False)
    assert [v.invariant for v in result.violations] == [], result.trace


def test_the_caught_bugs_replay_command_gives_its_trace_hash_again(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--story", "raft-slow-disk", "--guard", "off"]) == 0  # caught, as predicted
    found = re.search(r"  trace (\w+); replay with: (.*)\n", capsys.readouterr().out)
    assert found is not None
    first_hash, command = found.groups()
    assert command == "minikafka simulate --story raft-slow-disk --guard off --first-seed 1"
    assert main(shlex.split(command)[1:]) == 0
    assert f"trace {first_hash}; replay with: {command}" in capsys.readouterr().out
