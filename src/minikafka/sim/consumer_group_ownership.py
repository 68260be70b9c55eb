"""NoDoubleOwnership for KIP-848 consumer groups, on the coordinators' events as they are logged: `analyze`'s
definition (`deploy/analysis/group_invariants.py`) checked as the run goes. A member holds a partition from the
`consumer_group_member_assignment` event that gives it to the member (assigned, or still to revoke) until the
member's next such event, or its leaving or fencing; two members' holdings of one partition never overlap.

Spans that meet at one instant do not overlap (analyze compares timestamps strictly), so a partition handed on at
the very time its previous owner gave it up is judged only once time moves past that instant.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

HELD = "consumer_group_member_assignment"
MEMBER_GONE = ("consumer_group_member_left", "consumer_group_member_fenced")
EVENTS = (HELD, *MEMBER_GONE)


@dataclass(frozen=True)
class Overlap:
    group: str
    tp: str
    owner: str  # the member holding it already
    member: str  # the member it was given to meanwhile
    member_epoch: int
    at_s: float


@dataclass
class ConsumerGroupOwnership:
    """Fed the coordinators' member events (`observe`); an overlap that outlives its instant goes to `fail`."""

    fail: Callable[[str, str], None]
    holders: dict[tuple[str, str], str] = field(default_factory=dict)  # (group, tp) -> the member holding it
    held: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)  # (group, member) -> its partitions
    suspects: list[Overlap] = field(default_factory=list)  # overlaps begun at the newest instant seen
    spans: int = 0  # holdings seen, for the count of what was checked

    def observe(self, event: Mapping[str, Any], at_s: float) -> None:
        self.judge(at_s)
        group, member = event.get("group_id"), event.get("member_id")
        if group is None or member is None:
            return
        key = (str(group), str(member))
        if event.get("event") == HELD:
            partitions = frozenset(map(str, event.get("assigned") or ())) | frozenset(
                map(str, event.get("pending_revocation") or ())
            )
            self._release(key, keep=partitions)
            self._hold(key, partitions, int(event.get("member_epoch") or 0), at_s)
        else:
            self._release(key, keep=frozenset())

    def judge(self, now_s: float) -> None:
        """The overlaps begun before `now_s` whose first holder still held the partition then are violations."""
        if not self.suspects or self.suspects[0].at_s >= now_s:
            return
        for overlap in self.suspects:
            if self.holders.get((overlap.group, overlap.tp)) == overlap.member and overlap.tp in self.held.get(
                (overlap.group, overlap.owner), frozenset()
            ):
                self.fail(
                    "NoDoubleOwnership",
                    f"group {overlap.group}: {overlap.tp} given to {overlap.member} (member epoch "
                    f"{overlap.member_epoch}) at {overlap.at_s:.3f}s while {overlap.owner} still held it",
                )
        self.suspects.clear()

    def _hold(self, key: tuple[str, str], partitions: frozenset[str], member_epoch: int, at_s: float) -> None:
        group, member = key
        self.held[key] = partitions
        self.spans += len(partitions)
        for tp in sorted(partitions):
            owner = self.holders.get((group, tp))
            if owner is not None and owner != member and tp in self.held.get((group, owner), frozenset()):
                self.suspects.append(Overlap(group, tp, owner, member, member_epoch, at_s))
            self.holders[(group, tp)] = member

    def _release(self, key: tuple[str, str], keep: frozenset[str]) -> None:
        group, member = key
        for tp in self.held.pop(key, frozenset()) - keep:
            if self.holders.get((group, tp)) == member:
                del self.holders[(group, tp)]
