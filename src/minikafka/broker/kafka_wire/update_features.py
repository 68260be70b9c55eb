"""UpdateFeatures (57) on a broker's or a controller's Kafka listener (`kafka-features upgrade --feature
kraft.version=1`, `kafka-features upgrade|downgrade --feature transaction.version=N`, with --bootstrap-server or
--bootstrap-controller): passed on to the active controller, as Kafka's brokers forward it. kraft.version goes to the
Raft quorum, from 0 to 1 only (KIP-853: the static quorum becomes dynamic); any other level of it, or a downgrade, is
refused INVALID_UPDATE_VERSION. Every other feature goes to the controller's UpdateFeatures, which checks it as
Kafka's FeatureControlManager does, all of them in one request: one refused update refuses them all, and every
result repeats the request's error, as Kafka 4 answers. ALTER on the cluster is required when an authorizer is
configured."""

from __future__ import annotations

from typing import Any

from minikafka.broker.kafka_wire.context import QuorumContext
from minikafka.broker.kafka_wire.entities import build, sibling
from minikafka.broker.kafka_wire.forwarded import forwarded_request_error
from minikafka.broker.kafka_wire.framing import Request, response_class
from minikafka.common.acl import AclOperation
from minikafka.common.errors import ErrorCode
from minikafka.pb import controller_pb2

UPDATE_FEATURES = 57
VERSIONS = {UPDATE_FEATURES: (0, 1)}
KRAFT_VERSION = "kraft.version"
UPGRADE, SAFE_DOWNGRADE = 1, 2  # FeatureUpdateKey.upgrade_type: 1 upgrade, 2 safe downgrade, 3 unsafe downgrade


def upgrade_type(update: Any) -> int:
    """v1's upgrade_type; v0's allow_downgrade is a safe downgrade."""
    if hasattr(update, "upgrade_type"):
        return int(update.upgrade_type)
    return SAFE_DOWNGRADE if update.allow_downgrade else UPGRADE


def refusal(update: Any) -> str | None:
    """Why the kraft.version update cannot be made, or None for kraft.version -> 1."""
    if upgrade_type(update) != UPGRADE or int(update.max_version_level) != 1:
        return f"{KRAFT_VERSION} can only be upgraded to 1, not set to {int(update.max_version_level)}"
    return None


async def _kraft_update(
    ctx: QuorumContext, update: Any, validate_only: bool, timeout_s: float
) -> tuple[ErrorCode, str | None]:
    why = refusal(update)
    if why is not None:
        return ErrorCode.INVALID_UPDATE_VERSION, why
    if validate_only:
        return ErrorCode.NONE, None
    quorum = ctx.quorum
    asked = controller_pb2.UpgradeKRaftVersionRequest(cluster_id=quorum.cluster_id, kraft_version=1)
    return forwarded_request_error(await quorum.controller.call_within("UpgradeKRaftVersion", asked, timeout_s))


async def _feature_updates(
    ctx: QuorumContext, updates: list[Any], validate_only: bool, timeout_s: float
) -> tuple[ErrorCode, str | None]:
    asked = controller_pb2.UpdateFeaturesRequest(validate_only=validate_only)
    for update in updates:
        asked.updates.add(
            feature=update.feature, max_version_level=int(update.max_version_level), upgrade_type=upgrade_type(update)
        )
    return forwarded_request_error(await ctx.quorum.controller.call_within("UpdateFeatures", asked, timeout_s))


async def update_features(ctx: QuorumContext, request: Request) -> Any:
    cls = response_class(UPDATE_FEATURES, request.header.api_version)
    entry = sibling(cls, "UpdatableFeatureResult")
    body = request.body
    if not ctx.allowed_on_cluster(AclOperation.ALTER):  # Kafka: ALTER on the cluster
        denied, why = ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed."
        results = tuple(
            build(entry, feature=u.feature, error_code=denied, error_message=why) for u in body.feature_updates
        )
        return build(cls, throttle_time=0, error_code=denied, error_message=why, results=results)
    timeout_s = max(0.001, body.timeout.total_seconds())
    validate_only = getattr(body, "validate_only", False)
    answers: dict[str, tuple[ErrorCode, str | None]] = {}
    others = [u for u in body.feature_updates if u.feature != KRAFT_VERSION]
    top: tuple[ErrorCode, str | None] = (ErrorCode.NONE, None)
    if others:
        top = await _feature_updates(ctx, others, validate_only, timeout_s)
        answers.update((u.feature, top) for u in others)
    for update in body.feature_updates:
        if update.feature == KRAFT_VERSION:
            answers[update.feature] = await _kraft_update(ctx, update, validate_only, timeout_s)
    results = tuple(
        build(entry, feature=u.feature, error_code=answers[u.feature][0], error_message=answers[u.feature][1])
        for u in body.feature_updates
    )
    return build(cls, throttle_time=0, error_code=top[0], error_message=top[1], results=results)


HANDLERS = {UPDATE_FEATURES: update_features}
