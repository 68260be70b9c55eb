"""A few seconds of benchmarks/fuzz_listeners.py against a real broker: random and mutated frames on its Kafka
listener, random and mutated messages for every method of its gRPC client listener; the broker stays alive and
its memory and open files come back within the script's bounds."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cluster_fixtures import running_cluster

sys.path.append(str(Path(__file__).parents[2] / "benchmarks"))
import fuzz_listeners  # noqa: E402 - the benchmark script, run here for a few seconds

pytestmark = pytest.mark.integration


def test_a_short_fuzz_of_both_listeners_leaves_the_broker_up_and_bounded(tmp_path: Path) -> None:
    with running_cluster(tmp_path / "run", 1, 1, **fuzz_listeners.SETTINGS) as cluster:
        runs = fuzz_listeners.fuzz(cluster, seconds=3, max_requests=3000, seed=7)
    for run in runs:
        print(run)
    assert [run.listener for run in runs] == ["kafka", "grpc"]
    assert all(run.requests > 0 and run.bounded for run in runs), runs
