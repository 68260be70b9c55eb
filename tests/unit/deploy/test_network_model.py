"""Network cuts as data: which calls a cut drops, checks on the groups, heals, and the nftables rules."""

from __future__ import annotations

import pytest

from minikafka.deploy.network_model import (
    CutError,
    base_ruleset,
    cut_rules,
    heal,
    is_dropped,
    isolate,
    parse_group,
    partition,
)

NODES = (1, 2, 3, 101, 102, 103)


def test_a_two_way_cut_drops_calls_both_ways_and_nothing_else() -> None:
    cut = partition(NODES, frozenset({1}), frozenset({101, 102, 103}), one_way=False)
    assert is_dropped([cut], 1, 101) and is_dropped([cut], 102, 1)
    assert not is_dropped([cut], 1, 2) and not is_dropped([cut], 2, 101)


def test_a_one_way_cut_drops_only_the_calls_of_the_first_group() -> None:
    cut = partition(NODES, frozenset({2}), frozenset({1}), one_way=True)
    assert is_dropped([cut], 2, 1)
    assert not is_dropped([cut], 1, 2)


def test_isolate_cuts_a_node_from_every_other_node() -> None:
    cut = isolate(NODES, 3)
    assert all(is_dropped([cut], 3, other) and is_dropped([cut], other, 3) for other in NODES if other != 3)
    assert not is_dropped([cut], 1, 2)


@pytest.mark.parametrize(
    ("first", "second", "message"),
    [({1}, {7}, "no node 7"), ({1, 2}, {2}, "node 2 is in both groups")],
)
def test_bad_groups_are_refused(first: set[int], second: set[int], message: str) -> None:
    with pytest.raises(CutError, match=message):
        partition(NODES, frozenset(first), frozenset(second), one_way=False)


def test_group_parsing() -> None:
    assert parse_group("1, 2,101") == {1, 2, 101}
    for bad in ("", "1,a", ","):
        with pytest.raises(CutError):
            parse_group(bad)


def test_heal_removes_every_cut_or_only_those_touching_the_given_nodes() -> None:
    cuts = (
        partition(NODES, frozenset({1}), frozenset({101}), False),
        partition(NODES, frozenset({2}), frozenset({3}), one_way=True),
    )
    only_one = heal(cuts, NODES, (3,))
    assert only_one.remaining == (cuts[0],) and only_one.healed == (cuts[1],)
    # An isolated node's cut touches every node: healing any of them heals it.
    assert heal((isolate(NODES, 1),), NODES, (2,)).remaining == ()
    assert heal(cuts, NODES).remaining == ()
    with pytest.raises(CutError, match="no node 9"):
        heal(cuts, NODES, (9,))


def test_kernel_rules_drop_the_connections_the_cut_side_opens() -> None:
    hosts = {1: "127.0.2.1", 101: "127.0.1.1"}
    one_way = cut_rules([partition(hosts, frozenset({1}), frozenset({101}), one_way=True)], hosts)
    assert one_way.splitlines() == [
        "flush chain ip minikafka cuts",
        "add rule ip minikafka cuts ip saddr 127.0.2.1 ip daddr 127.0.1.1 ct direction original drop",
        "add rule ip minikafka cuts ip saddr 127.0.1.1 ip daddr 127.0.2.1 ct direction reply drop",
    ]
    both = cut_rules([partition(hosts, frozenset({1}), frozenset({101}), one_way=False)], hosts)
    assert len(both.splitlines()) == 5
    assert cut_rules([], hosts) == "flush chain ip minikafka cuts\n"
    ruleset = base_ruleset(hosts)
    assert "meta skgid 61001 snat to 127.0.2.1" in ruleset and "meta skgid 61101 snat to 127.0.1.1" in ruleset
