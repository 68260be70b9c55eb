"""Shared test fixtures."""

from __future__ import annotations

import minikafka  # noqa: F401 - first: sets gRPC core's environment before grpc is imported (common/grpc_environment.py)

# isort: split
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Below Linux's ephemeral range (32768 and up), so no client connection's port is ever a planned node's.
WORKER_PORTS_BASE, WORKER_PORTS_SPAN = 10000, 5000


def pytest_configure(config: pytest.Config) -> None:  # noqa: ARG001 - pytest's hook signature
    """Each xdist worker plans clusters in a port range of its own: a port one worker planned but had not yet bound
    was otherwise free for another's cluster, and a node that cannot bind its port does not start."""
    import os

    from minikafka.deploy.local_cluster import PORT_RANGE_ENV

    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        low = WORKER_PORTS_BASE + int(worker[2:]) * WORKER_PORTS_SPAN
        os.environ[PORT_RANGE_ENV] = f"{low}-{low + WORKER_PORTS_SPAN - 1}"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The heaviest modules first (tests/module_seconds.json, written by tests/module_seconds.py), the rest in
    collection order: a worker handed a two-minute module last would run on alone while the others sit idle. The
    Makefile turns off xdist's own ordering (by number of tests), which put the one-test modules, the longest, last."""
    import json

    seconds = json.loads((REPO / "tests" / "module_seconds.json").read_text())
    first_index: dict[str, int] = {}
    for index, item in enumerate(items):
        first_index.setdefault(item.nodeid.split("::")[0], index)

    def heaviest_first(item: pytest.Item) -> tuple[int, int]:
        module = item.nodeid.split("::")[0]
        return -seconds.get(module, 0), first_index[module]

    items.sort(key=heaviest_first)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def _spark_sessions():  # noqa: ANN202 - yields a list holding the live SparkSession, started on first use
    sessions: list = []
    yield sessions
    for session in sessions:
        session.stop()


@pytest.fixture
def spark(_spark_sessions):  # noqa: ANN001, ANN201 - pyspark.sql.SparkSession, imported lazily so non-Spark runs stay fast
    """One SparkSession for the whole test run (starting one costs ~5 s), started again if its JVM died (a JVM
    error in one analysis must fail that test only, not every later one through a refused py4j connection)."""
    from minikafka.deploy.analysis.spark import spark_session, spark_session_alive

    if _spark_sessions and not spark_session_alive(_spark_sessions[0]):
        _spark_sessions.clear()
    if not _spark_sessions:
        _spark_sessions.append(spark_session("local[2]", "minikafka-tests"))
    return _spark_sessions[0]


@pytest.fixture(autouse=True)
def _spark_cache_cleared(_spark_sessions):  # noqa: ANN001, ANN202
    """A test that judged a run directly (not through `analyze`, which clears it) leaves its cached frames and
    checkpoints behind; the session's heap is shared by every later Spark test of the worker."""
    yield
    if _spark_sessions:
        from minikafka.deploy.analysis.spark import release_cached, spark_session_alive

        if spark_session_alive(_spark_sessions[0]):
            release_cached(_spark_sessions[0])


@pytest.fixture(autouse=True)
def _reset_structlog():  # noqa: ANN202
    """Each test starts from structlog's defaults, whatever an earlier test (or CLI main) configured."""
    import structlog

    yield
    structlog.reset_defaults()
