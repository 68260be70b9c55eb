"""The shipped broker shell on a virtual clock: the real `ReplicaManager`, `LogManager`, `AlterPartitionManager`
and the broker's background tasks run on `VirtualTimeLoop`, and simulated seconds pass without waiting for them."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from virtual_loop import WALL_START_S, run_virtual

from minikafka.broker.log_manager import LogManager, TopicPartition
from minikafka.broker.process import start_background_tasks
from minikafka.broker.produce_purgatory import ProducePurgatory
from minikafka.broker.replica.partition import PartitionConfig, PartitionMetadata, make_leader
from minikafka.broker.replica_manager import Replica, ReplicaManager
from minikafka.common.clock import monotonic_ms
from minikafka.common.errors import ErrorCode
from minikafka.common.record_batch import Record, build_batch
from minikafka.pb import controller_pb2
from minikafka.storage.log_config import LogConfig

TP = TopicPartition("orders", 0)
LAG_TIME_MAX_MS = 30_000
BROKER_EPOCHS = {0: 10, 1: 11, 2: 12}


class CommittingController:
    """The active controller as the broker's ControllerClient sees it: every AlterPartition is committed."""

    def __init__(self) -> None:
        self.isrs: list[list[int]] = []

    async def call(self, method: str, request: Any) -> controller_pb2.AlterPartitionResponse:
        assert method == "AlterPartition"
        entry = request.topics[0].partitions[0]
        self.isrs.append(sorted(s.broker_id for s in entry.new_isr_with_epochs))
        response = controller_pb2.AlterPartitionResponse()
        response.topics.add(topic_id=request.topics[0].topic_id).partitions.add(
            partition_index=entry.partition_index,
            leader_id=request.broker_id,
            leader_epoch=entry.leader_epoch,
            isr=self.isrs[-1],
            leader_recovery_state=entry.leader_recovery_state,
            partition_epoch=entry.partition_epoch + 1,
        )
        return response


def leading_broker(data_dir: Path, controller: CommittingController) -> SimpleNamespace:
    """Broker 0 leading orders-0 with followers 1 and 2 in its ISR, as `build_broker` wires the parts it needs."""
    config = SimpleNamespace(
        node_id=0,
        replica_lag_time_max_ms=LAG_TIME_MAX_MS,
        log_flush_scheduler_interval_ms=1000,
        log_retention_check_interval_ms=10_000,
        replica_high_watermark_checkpoint_interval_ms=5000,
        log_cleaner_enable=True,
        log_cleaner_backoff_ms=15_000,
        log_cleaner_dedupe_buffer_size=1 << 20,
        producer_id_expiration_check_interval_ms=600_000,
        producer_id_expiration_ms=86_400_000,
    )
    logs = LogManager(data_dir, lambda _topic: LogConfig())
    brokers = {
        i: SimpleNamespace(broker_epoch=e, fenced=False, in_controlled_shutdown=False) for i, e in BROKER_EPOCHS.items()
    }
    metadata = SimpleNamespace(image=SimpleNamespace(brokers=brokers))
    manager = ReplicaManager(config, logs, metadata, controller, lambda: 10, lambda: True)  # type: ignore[arg-type]
    now = monotonic_ms()
    topic_id = uuid.uuid4()
    partition = PartitionMetadata((0, 1, 2), (0, 1, 2), 0, 1, 1)
    role = make_leader(str(TP), 0, 10, partition, 0, 0, PartitionConfig(2, LAG_TIME_MAX_MS), now).state
    log = logs.get_or_create(TP, topic_id, now)
    manager.replicas[TP] = Replica(TP, topic_id, log, role, ProducePurgatory(str(TP)))
    return SimpleNamespace(
        config=config,
        logs=logs,
        manager=manager,
        dir_failed=asyncio.Event(),
        failures=logs.failures,
        lifecycle=None,
        stopping=asyncio.Event(),
    )


async def follow_every_second(manager: ReplicaManager, replica_id: int) -> None:
    """A follower that fetches from the log end once a simulated second: always caught up."""
    while True:
        log_end = manager.replicas[TP].log.log_end_offset
        manager.follower_fetch(TP, replica_id, BROKER_EPOCHS[replica_id], 1, log_end, -1, 1 << 20)
        await asyncio.sleep(1)


def test_a_silent_follower_leaves_the_isr_after_the_lag_time_in_simulated_seconds(tmp_path: Path) -> None:
    controller = CommittingController()
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        broker = leading_broker(tmp_path, controller)
        manager = broker.manager
        retention_checks: list[int] = []
        cleanup = broker.logs.cleanup_logs
        broker.logs.cleanup_logs = lambda wall_ms: (retention_checks.append(wall_ms), cleanup(wall_ms))[1]
        tasks = [*start_background_tasks(broker), asyncio.create_task(follow_every_second(manager, 1))]
        started = loop.time()
        await asyncio.sleep(LAG_TIME_MAX_MS / 1000 - 1)  # broker 2 silent for just under the lag time: still in
        seen["isr_before"] = sorted(manager.replicas[TP].leader.isr)
        # The ISR check runs every half lag time, as Kafka's: the first to see the lag exceeded is at 45 s.
        await asyncio.sleep(20)
        seen["isr_after"] = sorted(manager.replicas[TP].leader.isr)
        answer = manager.produce(TP, build_batch([Record(b"v")]), -1, 30_000)
        seen["produced"] = (await answer).error  # acks=all: needs broker 1 only, which fetches it within a second
        seen["high_watermark"] = manager.replicas[TP].leader.high_watermark
        seen["simulated_s"] = loop.time() - started
        seen["retention_checks"] = retention_checks
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await manager.stop()
        broker.logs.close_all(monotonic_ms())

    run_virtual(scenario(), start_s=1000.0)
    assert seen["isr_before"] == [0, 1, 2]
    assert seen["isr_after"] == [0, 1]
    assert controller.isrs == [[0, 1]]
    assert seen["produced"] == ErrorCode.NONE and seen["high_watermark"] == 1
    assert 49 <= seen["simulated_s"] <= 50
    # Retention runs on the simulated wall clock, every 10 simulated seconds from the loop's fixed start epoch.
    assert seen["retention_checks"][:4] == [int((WALL_START_S + 10 * n) * 1000) for n in range(1, 5)]
