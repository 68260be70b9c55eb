"""UpdateFeatures of transaction.version (kafka-features upgrade|downgrade): Kafka's FeatureControlManager checks,
each refused INVALID_UPDATE_VERSION with nothing written, and all or nothing across the request."""

from __future__ import annotations

from minikafka.common.errors import ErrorCode
from minikafka.kraft_controller.control.feature_control import FeatureUpdate, UpgradeType, update_features
from minikafka.kraft_controller.metadata.image import MetadataImage
from minikafka.kraft_controller.metadata.records import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    TRANSACTION_VERSION,
    FeatureLevel,
)

TV = TRANSACTION_VERSION


def at(level: int) -> MetadataImage:
    return MetadataImage().replay(FeatureLevel(TV, level), 0)


def test_an_upgrade_and_a_downgrade_each_write_one_feature_level() -> None:
    upgraded = update_features(at(1), [FeatureUpdate(TV, 2)], validate_only=False)
    assert upgraded.records == (FeatureLevel(TV, 2),) and upgraded.response.error_code == ErrorCode.NONE
    for kind in (UpgradeType.SAFE_DOWNGRADE, UpgradeType.UNSAFE_DOWNGRADE):
        downgraded = update_features(at(2), [FeatureUpdate(TV, 0, kind)], validate_only=False)
        assert downgraded.records == (FeatureLevel(TV, 0),) and downgraded.response.error_code == ErrorCode.NONE
    assert update_features(at(1), [FeatureUpdate(TV, 2)], validate_only=True).records == ()


def refusal(image: MetadataImage, *updates: FeatureUpdate) -> str:
    result = update_features(image, updates, validate_only=False)
    assert result.records == () and result.response.error_code == ErrorCode.INVALID_UPDATE_VERSION
    return result.response.error_message or ""


def test_kafkas_checks_refuse_invalid_update_version() -> None:
    assert "without setting the upgrade type" in refusal(at(2), FeatureUpdate(TV, 1))
    assert "Can't downgrade to a newer version" in refusal(at(1), FeatureUpdate(TV, 2, UpgradeType.SAFE_DOWNGRADE))
    assert "only supports versions 0-2" in refusal(at(2), FeatureUpdate(TV, 3))
    assert "cannot be less than 0" in refusal(at(2), FeatureUpdate(TV, -1, UpgradeType.SAFE_DOWNGRADE))
    assert "upgrade type" in refusal(at(1), FeatureUpdate(TV, 2, UpgradeType.of(7)))
    assert "does not support this feature" in refusal(at(1), FeatureUpdate("metadata.version", 21))
    assert "setting" in refusal(at(1), FeatureUpdate(ELIGIBLE_LEADER_REPLICAS_VERSION, 1))
    message = refusal(at(2), FeatureUpdate(TV, 1))
    assert message.startswith("Invalid update version 1 for feature transaction.version.")


def test_one_refused_update_refuses_the_whole_request() -> None:
    assert refusal(MetadataImage(), FeatureUpdate(TV, 2), FeatureUpdate("no.such.feature", 1))
