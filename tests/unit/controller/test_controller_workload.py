"""The controller workload of the benchmarks (benchmarks/controller_workload.py) against a real QuorumController
and its servicer, in-process as `kraft_test_server.py --workload controller` drives it: every write commits, and the
entries counted per write are the records Kafka's controller writes for it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from manual_raft import ManualRaft, active_controller

sys.path.append(str(Path(__file__).parents[3] / "benchmarks"))  # the benchmarks are scripts, not a package

from controller_workload import (  # noqa: E402 - found on the path added above
    FIRST_MEASURED_BROKER_ID,
    ControllerWorkload,
    WriteFailed,
    run_controller_workload,
)

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.metadata.records import BrokerStatus
from minikafka.kraft_controller.quorum_controller import QuorumController
from minikafka.kraft_controller.service import ControllerService


def in_process(controller: QuorumController, raft: ManualRaft) -> tuple[Any, Any]:
    service = ControllerService(controller, {1: "127.0.0.1:1"}, lambda: None, "cluster")  # type: ignore[arg-type,return-value]

    async def call(name: str, request: Any) -> Any:
        return await getattr(service, name)(request, None)

    async def high_watermark() -> int:
        return raft.high_watermark

    return call, high_watermark


async def test_every_write_commits_and_counts_its_records() -> None:
    controller, raft = await active_controller(auto_commit=True)
    # The first tick writes the cluster's feature levels: done here, it cannot land among the counted writes.
    await controller.submit(lambda: controller.state.tick(0))
    call, high_watermark = in_process(controller, raft)
    try:
        workload = ControllerWorkload(registrations=40, outstanding=8, topic_partitions=4, sequential=5)
        report = await run_controller_workload(call, high_watermark, workload)
    finally:
        await controller.stop()
    assert report["outstanding"] == 8
    assert 0 < report["sequential_p50_ms"] <= report["sequential_p99_ms"]
    # A registration is one RegisterBroker record; a topic of 4 partitions is a TopicRecord and 4 PartitionRecords
    # (no config records: none was given).
    assert report["registrations"]["entries_per_write"] == 1.0
    assert report["topic_creations"] == {**report["topic_creations"], "partitions": 4, "entries_per_write": 5.0}
    assert report["registrations"]["writes_per_s"] == report["registrations"]["entries_per_s"] > 0
    image = controller.state.committed
    measured = range(FIRST_MEASURED_BROKER_ID, FIRST_MEASURED_BROKER_ID + 40)
    assert set(measured) | set(range(1000, 1005)) | {1, 2, 3} == set(image.brokers)
    assert all(image.brokers[b].status is BrokerStatus.UNFENCED for b in (1, 2, 3))
    assert sorted(image.topics_by_name) == [f"bench-{i}" for i in range(10)]
    assert all(set(p.replicas) == {1, 2, 3} for t in image.topics_by_name.values() for p in t.partitions.values())


async def test_an_error_answer_fails_the_workload() -> None:
    controller, raft = await active_controller(auto_commit=True)
    call, high_watermark = in_process(controller, raft)
    raft.leader_id, raft.epoch = 2, 2  # leadership moved on: the servicer answers NOT_CONTROLLER
    try:
        with pytest.raises(WriteFailed, match=f"broker 1000: error_code: {ErrorCode.NOT_CONTROLLER.name}"):
            await run_controller_workload(call, high_watermark, ControllerWorkload(10, 2, sequential=1))
    finally:
        await controller.stop()
