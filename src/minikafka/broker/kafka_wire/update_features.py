"""UpdateFeatures (57) on a broker's or a controller's Kafka listener (`kafka-features upgrade --feature
kraft.version=1`, with --bootstrap-server or --bootstrap-controller): passed on to the active controller, as Kafka's
brokers forward it. The one feature minikafka finalizes through it is kraft.version, from 0 to 1 (KIP-853: the static
quorum becomes dynamic); any other feature or level, or a downgrade, is refused with INVALID_UPDATE_VERSION, as
Kafka refuses a level it cannot go to. ALTER on the cluster is required when an authorizer is configured."""

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
UPGRADE = 1  # FeatureUpdateKey.upgrade_type: 1 upgrade, 2 safe downgrade, 3 unsafe downgrade


def refusal(update: Any) -> str | None:
    """Why the update cannot be made, or None for kraft.version -> 1."""
    if update.feature != KRAFT_VERSION:
        return f"feature {update.feature} cannot be updated here: only {KRAFT_VERSION} (to 1)"
    downgrade = getattr(update, "allow_downgrade", False) or getattr(update, "upgrade_type", UPGRADE) != UPGRADE
    if downgrade or int(update.max_version_level) != 1:
        return f"{KRAFT_VERSION} can only be upgraded to 1, not set to {int(update.max_version_level)}"
    return None


async def _update(
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
    answers = []
    for update in body.feature_updates:
        code, message = await _update(ctx, update, getattr(body, "validate_only", False), timeout_s)
        answers.append(build(entry, feature=update.feature, error_code=code, error_message=message))
    return build(cls, throttle_time=0, error_code=ErrorCode.NONE, error_message=None, results=tuple(answers))


HANDLERS = {UPDATE_FEATURES: update_features}
