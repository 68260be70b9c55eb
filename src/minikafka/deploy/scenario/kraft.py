"""The controller quorum's elections and leaderless time, from the Raft events of a run's logs (pure: no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True)
class QuorumElections:
    """`count` KRaft leaders elected; `leaderless_ms`: the time from each displaced leader's `raft_resigned` to the
    next election (an election after a leader that vanished without resigning, a crash, adds nothing: its start is
    not in the logs)."""

    count: int
    leaderless_ms: int
    epochs: tuple[int, ...]

    def text(self) -> str:
        epochs = f" (epochs {', '.join(map(str, self.epochs))})" if self.epochs else ""
        return f"{self.count} KRaft elections{epochs}, leaderless {self.leaderless_ms} ms"


def _ts(event: Mapping[str, object]) -> datetime:
    return datetime.fromisoformat(str(event["ts"]).replace("Z", "+00:00"))


Events = Sequence[Mapping[str, object]]


def quorum_elections(elected: Events, resigned: Events) -> QuorumElections:
    """`elected`: `raft_leader_elected` events; `resigned`: `raft_resigned` events (of any node, any order)."""
    wins = sorted(elected, key=_ts)
    leaderless = 0.0
    previous: datetime | None = None
    for win in wins:
        at = _ts(win)
        epoch = int(str(win["epoch"]))
        starts = [
            _ts(r)
            for r in resigned
            if int(str(r["epoch"])) < epoch and _ts(r) <= at and (previous is None or _ts(r) >= previous)
        ]
        if starts:
            leaderless += (at - min(starts)).total_seconds() * 1000
        previous = at
    return QuorumElections(len(wins), round(leaderless), tuple(int(str(w["epoch"])) for w in wins))
