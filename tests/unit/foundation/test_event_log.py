from __future__ import annotations

import io
import json
import re
from pathlib import Path

import structlog

from common.event_log import configure_event_log


def test_json_line_shape(tmp_path: Path) -> None:
    stderr = io.StringIO()
    path = configure_event_log("broker-2", tmp_path / "logs", stderr=stderr)
    try:
        structlog.get_logger().info("isr_committed", partition="t-0", isr=[1, 2], partition_epoch=4, topic_id=b"\x01")
        structlog.get_logger().debug("not_written")
    finally:
        structlog.reset_defaults()
    assert path == tmp_path / "logs" / "broker-2.jsonl"
    lines = path.read_text().splitlines()
    assert len(lines) == 1
    event = json.loads(lines[0])
    assert list(event)[:4] == ["ts", "node", "level", "event"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", event["ts"])
    assert event["node"] == "broker-2"
    assert event["level"] == "info"
    assert event["event"] == "isr_committed"
    assert event["isr"] == [1, 2] and event["partition_epoch"] == 4 and event["topic_id"] == "01"
    assert "isr_committed" in stderr.getvalue()
