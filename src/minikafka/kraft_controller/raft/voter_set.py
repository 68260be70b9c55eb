"""KIP-853's voter set in the metadata log: a VotersRecord is a control entry naming every voter by id and directory id,
with the endpoint its controller listener is reached at (Kafka's Endpoints). The latest one in a replica's log (or
its snapshot's, or the one it was formatted with) is its voter set, from the moment it is appended, committed or not,
as in Kafka; a truncation below it restores the one before.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from minikafka.kraft_controller.raft.messages import LogEntry

VOTERS_RECORD = b"VotersRecord "  # a control entry's data starts with it; a new leader's marker is empty
KRAFT_VERSION_RECORD = b"KRaftVersionRecord "  # a control entry: the quorum's kraft.version from here on

VoterSet = dict[int, str]  # voter id -> directory id
VoterEndpoints = dict[int, str]  # voter id -> host:port of its controller listener
CONTROLLER_LISTENER = "CONTROLLER"


def voters_record(voters: Mapping[int, str], endpoints: Mapping[int, str] | None = None) -> bytes:
    known = endpoints or {}
    listed = []
    for voter, directory in sorted(voters.items()):
        item: dict[str, object] = {"id": voter, "directory_id": directory}
        if known.get(voter):
            host, _, port = known[voter].rpartition(":")
            item["endpoints"] = [{"name": CONTROLLER_LISTENER, "host": host, "port": int(port)}]
        listed.append(item)
    document = {"version": 0, "voters": listed}
    return VOTERS_RECORD + json.dumps(document, separators=(",", ":")).encode()


def voters_of(entry: LogEntry) -> VoterSet | None:
    """The voter set a VotersRecord entry names; None for any other entry."""
    if not entry.control or not entry.data.startswith(VOTERS_RECORD):
        return None
    document = json.loads(entry.data[len(VOTERS_RECORD) :])
    return {int(v["id"]): str(v["directory_id"]) for v in document["voters"]}


def endpoints_of(entry: LogEntry) -> VoterEndpoints:
    """The voters' endpoints a VotersRecord entry names (a voter written without one is left out)."""
    if not entry.control or not entry.data.startswith(VOTERS_RECORD):
        return {}
    document = json.loads(entry.data[len(VOTERS_RECORD) :])
    found: VoterEndpoints = {}
    for voter in document["voters"]:
        for endpoint in voter.get("endpoints", ()):
            found.setdefault(int(voter["id"]), f"{endpoint['host']}:{endpoint['port']}")
    return found


def describe(voters: Mapping[int, str]) -> list[str]:
    """For events: `id:directory` of each voter, in id order."""
    return [f"{i}:{d}" if d else str(i) for i, d in sorted(voters.items())]
