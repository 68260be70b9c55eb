"""Which `--set` values turn a data guard off, and the same configs with every guard on again."""

from __future__ import annotations

from minikafka.sim.guards import guards_off, guards_on


def test_a_guard_is_off_at_any_value_but_its_guarded_one() -> None:
    assert guards_off({}) == []
    assert guards_off({"unclean.leader.election.enable": "false", "log.retention.ms": "1"}) == []
    assert guards_off({"eligible.leader.replicas.version": "0"}, {}) == ["eligible.leader.replicas.version=0"]
    assert guards_off({}, {"alter.partition.broker.epoch.check": "false"}) == [
        "alter.partition.broker.epoch.check=false"
    ]


def test_guards_on_puts_back_the_guarded_values_and_keeps_the_rest() -> None:
    configs = {"unclean.leader.election.enable": "true", "minikafka.alter.partition.partition.epoch.check": "false"}
    on = guards_on({**configs, "log.retention.ms": "1"})
    assert on == {
        "unclean.leader.election.enable": "false",
        "minikafka.alter.partition.partition.epoch.check": "true",
        "log.retention.ms": "1",
    }
    assert guards_off(on) == []
