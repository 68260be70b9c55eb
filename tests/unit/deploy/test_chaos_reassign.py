"""The `reassign` fault kind: an operator's partition reassignment, drawn only when named, instantaneous, taking no
place among `--max-at-once`; chaos sends it through the admin client and records it for `analyze`."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from minikafka.client.admin import PartitionDescription
from minikafka.common.errors import ErrorCode
from minikafka.deploy.chaos import FaultRunner
from minikafka.deploy.chaos_schedule import (
    FAULT_KINDS,
    ChaosPlanConfig,
    FaultStep,
    overlapping_groups,
    plan_faults,
    reordered,
)

CONFIG = ChaosPlanConfig(duration_s=600, brokers=[1, 2, 3], controllers=[101, 102, 103])
KINDS = ("kill", "pause", "hold-alter-partition", "reassign")


def test_a_reassignment_is_drawn_only_when_named_and_is_instantaneous_with_an_order_of_every_broker() -> None:
    others = tuple(kind for kind in FAULT_KINDS if kind != "reassign")
    assert all(s.kind != "reassign" for seed in range(20) for s in plan_faults(seed, others, CONFIG))
    steps = plan_faults(4, ("reassign", "kill"), CONFIG)
    assert steps == plan_faults(4, ("kill", "reassign"), CONFIG)  # pure: the same seed, the same plan
    reassignments = [s for s in steps if s.kind == "reassign"]
    assert reassignments and all(s.down_s == 0.0 and not s.groups for s in reassignments)
    assert all(sorted(s.replicas) == [1, 2, 3] and s.target in CONFIG.brokers for s in reassignments)
    assert len({s.replicas for s in reassignments}) > 1
    assert all(s.replicas == () for s in steps if s.kind != "reassign")


@pytest.mark.parametrize("seed", range(40))
def test_a_reassignment_takes_no_place_among_the_faults_at_once_and_one_a_group(seed: int) -> None:
    config = replace(CONFIG, overlap=1.0, max_at_once=2)
    for group in overlapping_groups(plan_faults(seed, KINDS, config)):
        assert sum(s.kind != "reassign" for s in group) <= 2
        assert sum(s.kind == "reassign" for s in group) <= 1
        lasting = [s for s in group if s.down_s]
        for index, step in enumerate(group[1:], start=1):
            joined = [s for s in group[:index] if s.down_s][-1]  # the last lasting step before it
            assert joined.at_s <= step.at_s <= joined.at_s + joined.down_s + 1e-3
        if len(lasting) > 1:
            assert len({s.target for s in lasting}) == len(lasting)  # each on a node of its own


def test_with_a_reassignment_a_group_can_hold_two_lasting_faults_and_the_request() -> None:
    config = replace(CONFIG, overlap=1.0, max_at_once=2)
    groups = [g for seed in range(40) for g in overlapping_groups(plan_faults(seed, KINDS, config))]
    assert any(len(g) == 3 and g[1].kind == "reassign" for g in groups)  # a lasting step joins after it
    assert any(len(g) == 3 and g[2].kind == "reassign" for g in groups)  # it joins a full group


def test_the_new_order_is_the_current_replicas_ranked_by_the_plan_or_rotated_when_unchanged() -> None:
    assert reordered((1, 2, 3), (3, 1, 2)) == (3, 1, 2)
    assert reordered((2, 3), (3, 1, 2)) == (3, 2)  # RF 2: the same two replicas, reordered
    assert reordered((1, 2, 3), (1, 2, 3)) == (2, 3, 1)  # already so: rotated, so the partition epoch moves
    assert reordered((1, 2, 4), (2, 1, 3)) == (2, 1, 4)  # a broker the order does not name goes last


class FakeAdmin:
    def __init__(self) -> None:
        self.replicas = [2, 3, 1]
        self.sent: list[tuple[str, int, list[int]]] = []

    def describe_topics(self, topics: list[str]) -> list[Any]:
        partitions = [
            PartitionDescription(p, 1, 0, 0, list(self.replicas if p == 1 else [1, 2, 3]), [1, 2, 3]) for p in range(3)
        ]
        return [SimpleNamespace(partitions=partitions)]

    def alter_partition_reassignments(self, targets: list[tuple[str, int, list[int]]]) -> list[Any]:
        ((topic, partition, replicas),) = targets
        self.sent.append((topic, partition, list(replicas)))
        self.replicas = list(replicas)
        return [(topic, partition, ErrorCode.NONE, "")]

    def list_partition_reassignments(self) -> dict[Any, Any]:
        return {}


def test_chaos_sends_the_reassignment_through_the_admin_client_and_records_it(tmp_path: Path) -> None:
    runner = FaultRunner.__new__(FaultRunner)
    runner.admin = FakeAdmin()  # type: ignore[assignment]
    runner.cluster = SimpleNamespace(run_dir=tmp_path)  # type: ignore[assignment]
    runner.log = lambda _line: None
    runner._inject(FaultStep(1.0, "reassign", 4, 0.0, replicas=(1, 3, 2)))  # partition 4 % 3 = 1
    assert runner.admin.sent == [("chaos", 1, [1, 3, 2])]  # type: ignore[attr-defined]
    (event,) = [json.loads(line) for line in (tmp_path / "logs" / "faults.jsonl").read_text().splitlines()]
    assert event["event"] == "fault_injected" and event["fault"] == "reassign"
    assert (event["target"], event["partition"], event["role"]) == ("chaos-1", "chaos-1", "partition")
    assert (event["original_replicas"], event["target_replicas"]) == ([2, 3, 1], [1, 3, 2])
