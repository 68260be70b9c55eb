"""Network cuts between the nodes of a run, as data: which calls are dropped, and the kernel rules that drop them.

Pure: no I/O. A cut from group A to group B drops the calls a node of A makes to a node of B (its requests and
their answers); a two-way cut also drops B's calls to A. The same meaning holds in both modes: the kernel drops
the packets of connections A opened towards B, the in-process filter makes A's calls to B hang until their
deadline. Clients outside the run (the host's tools) are never cut.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

NODE_GROUP_BASE = 61000
"""Kernel mode runs node N with group id NODE_GROUP_BASE + N, so the kernel can tell its sockets apart."""


class CutError(ValueError):
    """A cut that cannot be made (unknown node, a node on both sides); the message says which."""


@dataclass(frozen=True)
class Cut:
    from_ids: frozenset[int]
    to_ids: frozenset[int]
    one_way: bool

    def drops(self, source: int, destination: int) -> bool:
        """Whether a call from `source` to `destination` is dropped by this cut."""
        if source in self.from_ids and destination in self.to_ids:
            return True
        return not self.one_way and source in self.to_ids and destination in self.from_ids

    def touches(self, node_ids: Iterable[int]) -> bool:
        wanted = set(node_ids)
        return bool(wanted & (self.from_ids | self.to_ids))

    def to_json(self) -> dict:
        return {"from": sorted(self.from_ids), "to": sorted(self.to_ids), "one_way": self.one_way}

    @classmethod
    def from_json(cls, entry: Mapping) -> Cut:
        return cls(frozenset(entry["from"]), frozenset(entry["to"]), bool(entry["one_way"]))


@dataclass(frozen=True)
class HealResult:
    remaining: tuple[Cut, ...]
    healed: tuple[Cut, ...]


def parse_group(text: str) -> frozenset[int]:
    """`1,2,101` as a set of node ids."""
    try:
        ids = frozenset(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise CutError(f"expected node ids like 1,2,101, got {text!r}") from None
    if not ids:
        raise CutError(f"no node id in {text!r}")
    return ids


def partition(known: Iterable[int], first: frozenset[int], second: frozenset[int], one_way: bool) -> Cut:
    """A checked cut between two groups of the run's nodes."""
    _check_known(known, first | second)
    both = sorted(first & second)
    if both:
        raise CutError(f"node {both[0]} is in both groups")
    return Cut(first, second, one_way)


def isolate(known: Iterable[int], node_id: int) -> Cut:
    """Cut one node from every other node of the run (both ways)."""
    nodes = frozenset(known)
    _check_known(nodes, {node_id})
    others = nodes - {node_id}
    if not others:
        raise CutError(f"node {node_id} is the only node of the run; there is nothing to cut it from")
    return Cut(frozenset({node_id}), others, one_way=False)


def heal(cuts: Iterable[Cut], known: Iterable[int], node_ids: Iterable[int] = ()) -> HealResult:
    """Remove every cut, or only those touching `node_ids`."""
    wanted = frozenset(node_ids)
    _check_known(known, wanted)
    current = tuple(cuts)
    if not wanted:
        return HealResult((), current)
    healed = tuple(cut for cut in current if cut.touches(wanted))
    return HealResult(tuple(cut for cut in current if not cut.touches(wanted)), healed)


def is_dropped(cuts: Iterable[Cut], source: int, destination: int) -> bool:
    return any(cut.drops(source, destination) for cut in cuts)


def _check_known(known: Iterable[int], ids: Iterable[int]) -> None:
    nodes = set(known)
    unknown = sorted(set(ids) - nodes)
    if unknown:
        raise CutError(f"no node {unknown[0]} in the run (nodes: {', '.join(str(n) for n in sorted(nodes))})")


# ---- kernel rules (nftables, inside the run's own network namespace) ----

TABLE = "minikafka"


def base_ruleset(addresses: Mapping[int, str]) -> str:
    """The run's table: each node's connections leave from its own address; the `cuts` chain starts empty.

    Nodes connect out from 127.0.0.1 (the kernel's choice for loopback); rewriting the source by the socket's
    group id lets a cut be written on addresses. Loaded before any node starts, so connection tracking sees every
    connection from its first packet (the one-way rules depend on which side opened it).
    """
    snat = "".join(
        f"    meta skgid {NODE_GROUP_BASE + node_id} snat to {host}\n" for node_id, host in sorted(addresses.items())
    )
    return (
        f"table ip {TABLE} {{\n"
        "  chain source_addresses {\n"
        "    type nat hook postrouting priority 100; policy accept;\n"
        f"{snat}"
        "  }\n"
        "  chain cuts {\n"
        "    type filter hook input priority 0; policy accept;\n"
        "  }\n"
        "}\n"
    )


def cut_rules(cuts: Iterable[Cut], addresses: Mapping[int, str]) -> str:
    """An nft script replacing the `cuts` chain's rules: drop the packets of every dropped connection."""
    lines = [f"flush chain ip {TABLE} cuts"]
    for cut in cuts:
        lines.extend(_direction_rules(cut.from_ids, cut.to_ids, addresses))
        if not cut.one_way:
            lines.extend(_direction_rules(cut.to_ids, cut.from_ids, addresses))
    return "\n".join(lines) + "\n"


def _direction_rules(sources: frozenset[int], destinations: frozenset[int], addresses: Mapping[int, str]) -> list[str]:
    # A connection opened by a source towards a destination loses its packets both ways (requests and answers);
    # connections the destination opens towards the source are untouched.
    rules = []
    for source in sorted(sources):
        for destination in sorted(destinations):
            a, b = addresses[source], addresses[destination]
            rules.append(f"add rule ip {TABLE} cuts ip saddr {a} ip daddr {b} ct direction original drop")
            rules.append(f"add rule ip {TABLE} cuts ip saddr {b} ip daddr {a} ct direction reply drop")
    return rules
