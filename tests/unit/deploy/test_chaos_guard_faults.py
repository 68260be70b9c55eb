"""chaos runs the guards' fault kinds with its fault tools: `stop` then `start`, `hold-alter-partition` then its
release, each after the step's time."""

from __future__ import annotations

from typing import Any

from minikafka.deploy.chaos import FaultRunner
from minikafka.deploy.chaos_schedule import FaultStep


class RecordingFaults:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return lambda node_id, *_args, **_kwargs: self.calls.append((name, node_id))


def test_the_guards_faults_go_through_the_fault_tools() -> None:
    runner = FaultRunner.__new__(FaultRunner)
    faults = RecordingFaults()
    runner.faults = faults  # type: ignore[assignment]
    runner._inject(FaultStep(1.0, "stop", 2, 0.0))
    runner._inject(FaultStep(2.0, "hold-alter-partition", 3, 0.0))
    assert faults.calls == [("stop", 2), ("start", 2), ("hold_alter_partition", 3), ("release_alter_partition", 3)]
