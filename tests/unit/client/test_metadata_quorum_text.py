"""`metadata-quorum describe` prints Kafka's kafka-metadata-quorum text: --status's MaxFollowerLag and
MaxFollowerLagTimeMs from the voter with the shortest log, --replication's Lag against the leader's log end, and
with --human-readable each time as how long ago it was."""

from __future__ import annotations

from typing import Any

import pytest

from minikafka.client.metadata_quorum_command import replication_text, status_text
from minikafka.common.cli_support import CliError

NOW_MS = 1_700_000_010_000


def replica(node: int, end: int, fetched: int, caught_up: int) -> dict[str, Any]:
    return {
        "id": node,
        "directory_id": "",
        "log_end_offset": end,
        "lag": 0,
        "last_fetch_timestamp": fetched,
        "last_caught_up_timestamp": caught_up,
    }


def quorum(*voters: dict[str, Any], observers: tuple[dict[str, Any], ...] = ()) -> dict[str, Any]:
    return {
        "leader_id": 101,
        "leader_epoch": 3,
        "high_watermark": 40,
        "voters": list(voters),
        "observers": list(observers),
        "endpoints": {},
    }


HEADER = ["NodeId", "DirectoryId", "LogEndOffset", "Lag", "LastFetchTimestamp", "LastCaughtUpTimestamp", "Status"]
BEHIND = quorum(
    replica(102, 35, NOW_MS - 20, NOW_MS - 900),
    replica(101, 42, NOW_MS - 5, NOW_MS - 5),
    replica(103, 42, NOW_MS - 10, NOW_MS - 10),
    observers=(replica(1, 0, -1, -1),),
)


def rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("  ") if cell.strip()] for line in text.splitlines()]


def status_value(text: str, name: str) -> str:
    return next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith(name + ":"))


def test_status_measures_the_shortest_log_against_the_leader() -> None:
    text = status_text(BEHIND, "c1")
    assert status_value(text, "MaxFollowerLag") == "7"  # the leader's log end 42, voter 102's 35
    assert status_value(text, "MaxFollowerLagTimeMs") == "895"  # caught up 895 ms before the leader


def test_status_of_voters_at_the_leaders_log_end_has_no_lag() -> None:
    even = quorum(replica(102, 42, NOW_MS, NOW_MS - 30), replica(101, 42, NOW_MS, NOW_MS))
    text = status_text(even, "c1")
    assert (status_value(text, "MaxFollowerLag"), status_value(text, "MaxFollowerLagTimeMs")) == ("0", "0")
    never = quorum(replica(101, 42, NOW_MS, NOW_MS), replica(102, 0, -1, -1))
    assert status_value(status_text(never, "c1"), "MaxFollowerLagTimeMs") == "-1"


def test_replication_prints_epoch_milliseconds_or_how_long_ago() -> None:
    plain = rows(replication_text(BEHIND, now_ms=NOW_MS))
    assert plain[0] == HEADER
    assert plain[1:] == [
        ["102", "-", "35", "7", str(NOW_MS - 20), str(NOW_MS - 900), "Follower"],
        ["101", "-", "42", "0", str(NOW_MS - 5), str(NOW_MS - 5), "Leader"],
        ["103", "-", "42", "0", str(NOW_MS - 10), str(NOW_MS - 10), "Follower"],
        ["1", "-", "0", "42", "-1", "-1", "Observer"],
    ]
    human = rows(replication_text(BEHIND, human_readable=True, now_ms=NOW_MS))
    assert [row[4:6] for row in human[1:]] == [
        ["20 ms ago", "900 ms ago"],
        ["5 ms ago", "5 ms ago"],
        ["10 ms ago", "10 ms ago"],
        ["-1", "-1"],
    ]


def test_a_time_after_now_is_refused_as_clock_drift() -> None:
    ahead = quorum(replica(101, 42, NOW_MS + 50, NOW_MS))
    with pytest.raises(CliError, match="possible drift in system clock"):
        replication_text(ahead, human_readable=True, now_ms=NOW_MS)


def test_status_names_a_directory_only_where_there_is_one() -> None:
    static = quorum(replica(101, 42, NOW_MS, NOW_MS)) | {"endpoints": {101: "127.0.1.1:9093"}}
    dynamic = quorum(replica(101, 42, NOW_MS, NOW_MS) | {"directory_id": "Jb0uEV3sS6mpIfzOXQlTlw"})
    assert status_value(status_text(static, "c1"), "CurrentVoters") == (
        '[{"id": 101, "endpoints": ["CONTROLLER://127.0.1.1:9093"]}]'
    )
    assert status_value(status_text(dynamic, "c1"), "CurrentVoters") == (
        '[{"id": 101, "directoryId": "Jb0uEV3sS6mpIfzOXQlTlw"}]'
    )
