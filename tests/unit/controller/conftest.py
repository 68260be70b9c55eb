"""Fixtures for the controller tests: the commit harness in controller_harness.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from controller_harness import Harness

from minikafka.kraft_controller.control.control_config import ControlConfig


@pytest.fixture
def make_harness() -> Callable[..., Harness]:
    def make(**kwargs: Any) -> Harness:
        config_fields = {k: kwargs.pop(k) for k in list(kwargs) if k in ControlConfig.__dataclass_fields__}
        # transaction.version 0: no FeatureLevel record of it shifts the offsets (broker epochs) the tests expect.
        config = ControlConfig(**{"session_timeout_ms": 1000, "transaction_version": 0, **config_fields})
        return Harness(config, **kwargs)

    return make


@pytest.fixture
def harness(make_harness: Callable[..., Harness]) -> Harness:
    return make_harness()
