"""minikafka's transactional producer picks its transaction protocol as Kafka's Java producer 4.0 does: from the
finalized transaction.version, read at initialization and after each EndTxn. At level 2: no AddPartitionsToTxn,
Produce v12, EndTxn v5 whose new epoch it adopts (its sequences from 0); an upgrade to 2 after initialization bumps
the epoch with InitProducerId first; an older FinalizedFeaturesEpoch changes nothing."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from minikafka.client.transaction_protocol import TransactionProtocol
from minikafka.client.transactional_session import TransactionalSession
from minikafka.common.errors import ErrorCode

TV = "transaction.version"


def test_the_protocol_is_read_from_the_finalized_level_and_never_from_an_older_epoch() -> None:
    start = TransactionProtocol().read({TV: 2}, 10, initializing=True)
    assert start.protocol == TransactionProtocol(True, 10) and not start.epoch_bump_required
    assert (start.protocol.produce_version, start.protocol.end_txn_version, start.protocol.adds_partitions) == (
        12,
        5,
        False,
    )
    stale = start.protocol.read({TV: 0}, 9, initializing=False)
    assert stale.protocol is start.protocol
    down = start.protocol.read({}, 11, initializing=False)
    assert down.protocol == TransactionProtocol(False, 11) and not down.epoch_bump_required
    assert (down.protocol.produce_version, down.protocol.end_txn_version, down.protocol.adds_partitions) == (9, 3, True)
    up = down.protocol.read({TV: 2}, 12, initializing=False)
    assert up.protocol.v2 and up.epoch_bump_required  # Kafka's clientSideEpochBumpRequired


class FakeCluster:
    """One broker that is coordinator and leader: records (api key, version) of each request and answers it."""

    def __init__(self, level: int) -> None:
        self.level, self.features_epoch = level, 1
        self.asked: list[tuple[int, int]] = []
        self.epoch = 0

    async def any_broker(self, body: Any) -> Any:
        return await self.send(body)

    def connection(self, _address: str) -> FakeCluster:
        return self

    async def send(self, body: Any) -> Any:
        key, version = type(body).__api_key__, type(body).__version__
        self.asked.append((key, version))
        ok = ErrorCode.NONE
        if key == 18:
            levels = [SimpleNamespace(name=TV, max_version_level=self.level)] if self.level else []
            epoch = self.features_epoch
            return SimpleNamespace(error_code=ok, finalized_features=levels, finalized_features_epoch=epoch)
        if key == 10:
            return SimpleNamespace(error_code=ok, host="b1", port=9092)
        if key == 22:
            self.epoch = 0 if body.producer_id == -1 else self.epoch + 1
            return SimpleNamespace(error_code=ok, producer_id=7, producer_epoch=self.epoch)
        if key == 3:
            partition = SimpleNamespace(partition_index=0, leader_id=1)
            return SimpleNamespace(brokers=[SimpleNamespace(node_id=1, host="b1", port=9092)],
                                   topics=[SimpleNamespace(error_code=ok, partitions=[partition])])  # fmt: skip
        if key == 0:
            line = SimpleNamespace(error_code=ok, base_offset=0)
            return SimpleNamespace(responses=[SimpleNamespace(partition_responses=[line])])
        if key == 24:
            line = SimpleNamespace(partition_error_code=ok)
            return SimpleNamespace(results_by_topic_v3_and_below=[SimpleNamespace(results_by_partition=[line])])
        assert key == 26
        if version >= 5:
            self.epoch += 1
            return SimpleNamespace(error_code=ok, producer_id=7, producer_epoch=self.epoch)
        return SimpleNamespace(error_code=ok)


def transaction(cluster: FakeCluster, session: TransactionalSession) -> list[tuple[int, int]]:
    """One transaction of one batch; the requests it sent besides ApiVersions and Metadata."""
    before = len(cluster.asked)

    async def run() -> None:
        await session.add_partitions()
        await session.produce(0, [b"x"])
        await session.end(commit=True)

    asyncio.run(run())
    return [asked for asked in cluster.asked[before:] if asked[0] not in (3, 18)]


def test_at_level_2_the_session_sends_no_add_partitions_and_adopts_the_epoch_end_txn_v5_gives() -> None:
    cluster = FakeCluster(level=2)
    session = TransactionalSession(cluster, "t", "topic", [0], 5.0)  # type: ignore[arg-type]
    asyncio.run(session.init())
    assert transaction(cluster, session) == [(0, 12), (26, 5)]
    assert (session.epoch, session.sequences[0]) == (1, 0)  # bumped by the EndTxn; sequences from 0


def test_at_level_0_the_session_speaks_version_0_and_an_upgrade_bumps_the_epoch_before_version_2() -> None:
    cluster = FakeCluster(level=0)
    session = TransactionalSession(cluster, "t", "topic", [0], 5.0)  # type: ignore[arg-type]
    asyncio.run(session.init())
    assert transaction(cluster, session) == [(24, 3), (0, 9), (26, 3)]
    assert (session.epoch, session.sequences[0]) == (0, 1)
    cluster.level, cluster.features_epoch = 2, 2  # kafka-features upgrade during the next transaction
    assert transaction(cluster, session) == [(24, 3), (0, 9), (26, 3), (22, 4)]  # ends as begun, then the bump
    assert (session.epoch, session.sequences[0]) == (1, 0)
    assert transaction(cluster, session) == [(0, 12), (26, 5)]
