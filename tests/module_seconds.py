"""Writes tests/module_seconds.json from a JUnit XML report: the seconds each test module took, for the modules of
10 s or more. conftest.py runs the heaviest modules first, so that no worker starts a long module near the end
while the others sit idle.

    make test PYTEST_ARGS="--junitxml=/tmp/junit.xml" && .venv/bin/python tests/module_seconds.py /tmp/junit.xml
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

OUT = Path(__file__).with_name("module_seconds.json")
LEAST_SECONDS = 10


def module_path(classname: str) -> str:
    """`tests.integration.test_chaos` or `tests.integration.test_x.TestClass` as `tests/integration/test_x.py`."""
    parts = classname.split(".")
    last = max(i for i, part in enumerate(parts) if part.startswith("test_"))
    return "/".join(parts[: last + 1]) + ".py"


def module_seconds(report: Path) -> dict[str, int]:
    seconds: Counter[str] = Counter()
    for case in ET.parse(report).iter("testcase"):
        seconds[module_path(case.get("classname", ""))] += float(case.get("time", 0))
    return {module: round(s) for module, s in seconds.most_common() if s >= LEAST_SECONDS}


if __name__ == "__main__":
    OUT.write_text(json.dumps(module_seconds(Path(sys.argv[1])), indent=1) + "\n")
