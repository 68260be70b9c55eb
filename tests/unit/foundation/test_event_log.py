from __future__ import annotations

import io
import json
import re
from pathlib import Path

import structlog
import structlog.testing

from minikafka.common.event_log import configure_event_log, log_events


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


def without_ts(lines: list[str]) -> list[str]:
    return [re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "<ts>", line) for line in lines]


def test_log_events_writes_what_the_logger_writes_for_each_event(tmp_path: Path) -> None:
    events = [("broker_registered", {"offset": 4, "broker_id": 1, "rack": ""}), ("topic_created", {"offset": 5})]
    written: dict[str, tuple[list[str], list[str]]] = {}
    for way in ("logger", "log_events"):
        stderr = io.StringIO()
        path = configure_event_log(way, tmp_path / way, stderr=stderr)
        try:
            log = structlog.get_logger()
            if way == "logger":
                for event, fields in events:
                    log.info(event, **fields)
            else:
                log_events(log, "info", events)
                log_events(log, "debug", events)  # below the configured level: nothing
        finally:
            structlog.reset_defaults()
        assert path is not None
        written[way] = (without_ts(path.read_text().splitlines()), without_ts(stderr.getvalue().splitlines()))
    json_lines, readable = written["log_events"]
    assert [line.replace("log_events", "logger") for line in json_lines] == written["logger"][0]
    assert [line.replace("log_events", "logger") for line in readable] == written["logger"][1]
    assert events[0][1] == {"offset": 4, "broker_id": 1, "rack": ""}  # the caller's fields are left as they were


def test_log_events_goes_through_the_logger_when_structlog_is_configured_otherwise() -> None:
    with structlog.testing.capture_logs() as captured:
        log_events(structlog.get_logger(), "info", [("topic_created", {"offset": 5, "topic": "t"})])
    assert captured == [{"event": "topic_created", "offset": 5, "topic": "t", "log_level": "info"}]
