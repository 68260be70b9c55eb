"""Kafka's FeatureControlManager for the features UpdateFeatures may change here: transaction.version (KIP-890),
upgraded and downgraded at run time as `kafka-features upgrade|downgrade --feature transaction.version=N` do.

Kafka's checks, in its order, each refused INVALID_UPDATE_VERSION ("Invalid update version N for feature F. ..."):
an unknown upgrade type, a level below 0, a level the nodes do not support, a lower level without a downgrade type,
a higher level with one. The request is all or nothing, as Kafka 4's is: one refused update refuses them all and
writes nothing. A downgrade of transaction.version is a plain FeatureLevel record, safe or unsafe alike: a
transaction under way keeps the protocol its producer's requests carry (the coordinator and the partition leaders
read the transaction version from each request's version, never from the finalized level), and Kafka's producer
reads the new level when its transaction ends. eligible.leader.replicas.version stays set by the controllers'
setting of that name; kraft.version goes to the Raft quorum, not here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.controller_result import ControllerResult
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    SUPPORTED_FEATURE_LEVELS,
    FeatureLevel,
)


class UpgradeType(IntEnum):
    """Kafka's FeatureUpdate.UpgradeType, as UpdateFeatures v1 carries it (v0's allow_downgrade is SAFE_DOWNGRADE)."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3

    @classmethod
    def of(cls, value: int) -> UpgradeType:
        return cls(value) if value in cls._value2member_map_ else cls.UNKNOWN


@dataclass(frozen=True)
class FeatureUpdate:
    feature: str
    max_version_level: int
    upgrade_type: UpgradeType = UpgradeType.UPGRADE


@dataclass(frozen=True)
class UpdateFeaturesResponse:
    """Kafka 4's answer: one error for the whole request, which every feature's result repeats."""

    error_code: ErrorCode
    error_message: str | None = None


# Features whose level the controllers' own settings keep: an UpdateFeatures of them would be undone.
SET_BY_SETTINGS = frozenset({ELIGIBLE_LEADER_REPLICAS_VERSION})


def update_features(
    image: MetadataImage, updates: Sequence[FeatureUpdate], validate_only: bool
) -> ControllerResult[UpdateFeaturesResponse]:
    records = []
    for update in updates:
        why = _refusal(image, update)
        if why is not None:
            message = f"Invalid update version {update.max_version_level} for feature {update.feature}. {why}"
            return ControllerResult((), UpdateFeaturesResponse(ErrorCode.INVALID_UPDATE_VERSION, message))
        records.append(FeatureLevel(update.feature, update.max_version_level))
    return ControllerResult(() if validate_only else tuple(records), UpdateFeaturesResponse(ErrorCode.NONE))


def _refusal(image: MetadataImage, update: FeatureUpdate) -> str | None:
    level, current = update.max_version_level, image.feature_level(update.feature)
    if update.upgrade_type is UpgradeType.UNKNOWN:
        return "The controller does not support the given upgrade type."
    if level < 0:
        return "A feature version cannot be less than 0."
    supported = SUPPORTED_FEATURE_LEVELS.get(update.feature)
    if supported is None:
        return "The controller does not support this feature."
    if update.feature in SET_BY_SETTINGS:
        return f"It is set by the controllers' {update.feature} setting."
    low, high = supported
    if not low <= level <= high:
        return f"The controller only supports versions {low}-{high}."
    if level < current and update.upgrade_type is UpgradeType.UPGRADE:
        return (
            "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe "
            "downgrade."
        )
    if level > current and update.upgrade_type is not UpgradeType.UPGRADE:
        return "Can't downgrade to a newer version."
    return None
