"""The controller quorum's elections in analyze's summary, and how they are told (pure: no Spark, so a scenario's
report can tell them too)."""

from __future__ import annotations

from typing import Any


def kraft_summary(elections: list[dict[str, Any]], voter_set_changes: int = 0) -> dict[str, Any]:
    """How many KRaft elections, how long the quorum had no leader (where a resignation says when it began), and
    how many voter set changes (KIP-853) the leaders appended."""
    leaderless = [row["leaderless_ms"] for row in elections if row.get("leaderless_ms") is not None]
    return {
        "elections": len(elections),
        "leaderless_ms": round(sum(leaderless)),
        "epochs": elections,
        "voter_set_changes": voter_set_changes,
    }


def kraft_lines(summary: dict[str, Any]) -> list[str]:
    """The KRaft elections and leaderless time (none for a summary written before they were counted)."""
    kraft = summary.get("kraft")
    if not kraft:
        return []
    epochs = ", ".join(str(row["epoch"]) for row in kraft["epochs"])
    leaderless = kraft.get("leaderless_ms")
    timed = (
        f"leaderless {leaderless} ms (from a leader's raft_resigned to the next election)"
        if leaderless is not None
        else "no leader resigned, so no leaderless time to measure"
    )
    changes = kraft.get("voter_set_changes")
    changed = f"; {changes} voter set changes (KIP-853)" if changes else ""
    return [f"{kraft['elections']} KRaft elections" + (f" (epochs {epochs})" if epochs else "") + f"; {timed}{changed}"]
