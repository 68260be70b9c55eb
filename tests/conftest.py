"""Shared test fixtures."""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported (common/grpc_environment.py)

# isort: split
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def spark():  # noqa: ANN201 - pyspark.sql.SparkSession, imported lazily so non-Spark runs stay fast
    """One SparkSession for the whole test run (starting one costs ~5 s)."""
    from minikafka.deploy.analysis.spark import spark_session

    session = spark_session("local[2]", "minikafka-tests")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _reset_structlog():  # noqa: ANN202
    """Each test starts from structlog's defaults, whatever an earlier test (or CLI main) configured."""
    import structlog

    yield
    structlog.reset_defaults()
