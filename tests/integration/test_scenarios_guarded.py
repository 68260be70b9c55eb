"""Every built-in scenario but kip-903, guarded (scenario_cases.py says how)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario_cases import GUARDED, MARKS, run_and_check

pytestmark = MARKS


@pytest.mark.parametrize(("name", "value", "exit_code"), GUARDED)
def test_scenario_guarded(tmp_path: Path, name: str, value: str, exit_code: int) -> None:
    run_and_check(tmp_path, name, value, exit_code)
