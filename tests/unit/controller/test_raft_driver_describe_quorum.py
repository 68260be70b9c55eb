"""DescribeQuorum answers each replica's last fetch and last caught-up times in epoch milliseconds, as Kafka's
leader does, though the Raft core keeps the driver's monotonic clock; a replica that never fetched has -1."""

from __future__ import annotations

import time
from pathlib import Path

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.raft.core import RaftConfig
from minikafka.kraft_controller.raft.driver import RaftDriver
from minikafka.kraft_controller.raft.messages import VoteResponse

SINCE_ELECTED_MS = 250


async def test_the_times_are_epoch_milliseconds_and_an_idle_voter_has_none(tmp_path: Path) -> None:
    monotonic = [1_000]
    driver = RaftDriver(
        1, {1: "127.0.0.1:1", 2: "127.0.0.1:1"}, tmp_path, RaftConfig(), "test", clock=lambda: monotonic[0]
    )
    driver.voter_addresses = {}  # no transport: nothing is sent
    monotonic[0] += RaftConfig().election_timeout_ms * 10
    driver._apply(driver.core.tick(monotonic[0]))
    for _ in range(2):  # the pre-vote, then the vote
        granted = VoteResponse(ErrorCode.NONE, -1, driver.core.epoch, True)
        driver._apply(driver.core.handle_response(2, granted, monotonic[0]))
    assert driver.core.is_leader
    monotonic[0] += SINCE_ELECTED_MS

    before = int(time.time() * 1000)
    answer = driver.describe_quorum()
    after = int(time.time() * 1000)

    replicas = {r.replica_id: r for r in answer.current_voters}
    leader, idle = replicas[1], replicas[2]
    assert before - SINCE_ELECTED_MS <= leader.last_fetch_timestamp <= after - SINCE_ELECTED_MS
    assert leader.last_caught_up_timestamp == leader.last_fetch_timestamp
    assert (idle.last_fetch_timestamp, idle.last_caught_up_timestamp) == (-1, -1)
