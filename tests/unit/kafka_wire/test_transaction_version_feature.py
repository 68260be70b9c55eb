"""The transaction.version feature (KIP-890): the active controller writes its configured level, ApiVersions v3+
lists it among the finalized features (where a client reads which transaction protocol to speak), and an EndTxn v5
is a producer of transaction version 2: its epoch is bumped and the answer carries the new producer id and epoch."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from minikafka.broker.kafka_wire import api_versions, transactions
from minikafka.broker.transaction.core import Reply
from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.control_config import ControlConfig
from minikafka.kraft_controller.control.controller_state_machine import feature_records
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import TRANSACTION_VERSION, FeatureLevel


def test_the_controller_bootstraps_the_configured_transaction_version_once() -> None:
    """Written while the log holds no level of it; afterwards only UpdateFeatures changes it, and a downgrade to 0
    is remembered (level 0, recorded): no controller bootstraps it again."""
    image = MetadataImage()
    records = feature_records(image, ControlConfig(transaction_version=2))
    assert FeatureLevel(TRANSACTION_VERSION, 2) in records
    for offset, record in enumerate(records):
        image = image.replay(record, offset)
    assert image.feature_level(TRANSACTION_VERSION) == 2
    for configured in (0, 1, 2):
        assert not [r for r in feature_records(image, ControlConfig(transaction_version=configured))
                    if isinstance(r, FeatureLevel) and r.name == TRANSACTION_VERSION]  # fmt: skip
    downgraded = image.replay(FeatureLevel(TRANSACTION_VERSION, 0), 10)
    assert downgraded.feature_level(TRANSACTION_VERSION) == 0 and downgraded.feature_recorded(TRANSACTION_VERSION)
    assert FeatureLevel(TRANSACTION_VERSION, 2) not in feature_records(downgraded, ControlConfig(transaction_version=2))
    assert FeatureLevel(TRANSACTION_VERSION, 0) in downgraded.to_records()
    unset = feature_records(MetadataImage(), ControlConfig(transaction_version=0))
    assert FeatureLevel(TRANSACTION_VERSION, 0) not in unset  # level 0 is the default: nothing to write


def test_api_versions_lists_the_finalized_transaction_version() -> None:
    features = api_versions.finalized_features({TRANSACTION_VERSION: 2}, 42)
    answer = api_versions.response(3, features=features)
    assert [(f.name, f.min_version_level, f.max_version_level) for f in answer.finalized_features] == [
        (TRANSACTION_VERSION, 2, 2)
    ]
    assert answer.finalized_features_epoch == 42
    assert answer.supported_features == ()  # v0-v3 omit a feature whose lowest level is 0
    supported = api_versions.response(4, features=features).supported_features
    assert (TRANSACTION_VERSION, 0, 2) in [(f.name, f.min_version, f.max_version) for f in supported]
    assert api_versions.response(3, features=api_versions.finalized_features({TRANSACTION_VERSION: 0}, 7)) \
        .finalized_features == ()  # fmt: skip


class RecordingCoordinator:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    async def end_txn(self, *args: Any) -> Reply:
        self.calls.append(args)
        return Reply(0, ErrorCode.NONE, 7, 4)


def end_txn(version: int) -> tuple[Any, RecordingCoordinator]:
    coordinator = RecordingCoordinator()
    ctx = SimpleNamespace(allowed=lambda *_: True, transactions=coordinator)
    body = SimpleNamespace(transactional_id="payments", producer_id=7, producer_epoch=3, committed=True)
    request = SimpleNamespace(header=SimpleNamespace(api_version=version), body=body)
    return asyncio.run(transactions.handle_end_txn(ctx, request)), coordinator  # type: ignore[arg-type]


def test_end_txn_v5_is_a_producer_of_transaction_version_2_and_is_answered_its_new_epoch() -> None:
    answer, coordinator = end_txn(5)
    assert coordinator.calls == [("payments", 7, 3, True, 2)]
    assert (answer.error_code, answer.producer_id, answer.producer_epoch) == (ErrorCode.NONE, 7, 4)
    older, coordinator = end_txn(4)
    assert coordinator.calls == [("payments", 7, 3, True, 0)]
    assert not hasattr(older, "producer_id")


class Verifier:
    def __init__(self, answer: ErrorCode) -> None:
        self.answer, self.asked = answer, []  # type: list[tuple[Any, ...]]

    async def add_to_transaction(self, *args: Any) -> ErrorCode:
        self.asked.append(args)
        return self.answer


class Groups:
    def __init__(self) -> None:
        self.committed = 0

    async def txn_commit_offsets(self, *args: Any) -> tuple[ErrorCode, dict]:
        self.committed += 1
        return ErrorCode.NONE, {}

    def consumer_group(self, group_id: str) -> None:
        return None  # a classic group: the classic coordinator validates the member


def txn_offset_commit(version: int, answer: ErrorCode) -> tuple[Any, Verifier, Groups]:
    verifier, groups = Verifier(answer), Groups()
    image = SimpleNamespace(
        topics_by_name={"orders": SimpleNamespace(partitions={0: None}), "__consumer_offsets": SimpleNamespace(
            partitions={n: None for n in range(3)})}
    )  # fmt: skip
    ctx = SimpleNamespace(
        allowed=lambda *_: True, verifier=verifier, groups=groups, manager=SimpleNamespace(
            metadata=SimpleNamespace(image=image))
    )  # fmt: skip
    partition = SimpleNamespace(partition_index=0, committed_offset=5, committed_metadata="")
    body = SimpleNamespace(
        transactional_id="payments", group_id="g", producer_id=7, producer_epoch=3,
        topics=[SimpleNamespace(name="orders", partitions=[partition])],
    )  # fmt: skip
    request = SimpleNamespace(header=SimpleNamespace(api_version=version), body=body)
    return asyncio.run(transactions.handle_txn_offset_commit(ctx, request)), verifier, groups  # type: ignore[arg-type]


def first_error(answer: Any) -> ErrorCode:
    return ErrorCode.of(answer.topics[0].partitions[0].error_code)


def test_txn_offset_commit_v5_adds_the_groups_offsets_partition_before_committing() -> None:
    answer, verifier, groups = txn_offset_commit(5, ErrorCode.NONE)
    assert first_error(answer) == ErrorCode.NONE and groups.committed == 1
    [(transactional_id, producer_id, epoch, partition)] = verifier.asked
    assert (transactional_id, producer_id, epoch, partition.topic) == ("payments", 7, 3, "__consumer_offsets")
    fenced, _, groups = txn_offset_commit(5, ErrorCode.PRODUCER_FENCED)
    assert first_error(fenced) == ErrorCode.PRODUCER_FENCED and groups.committed == 0
    moving, _, _ = txn_offset_commit(5, ErrorCode.NOT_COORDINATOR)
    assert first_error(moving) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS  # not "find another group coordinator"
    older, verifier, groups = txn_offset_commit(4, ErrorCode.PRODUCER_FENCED)
    assert first_error(older) == ErrorCode.NONE and verifier.asked == [] and groups.committed == 1
