"""`cluster up --broker-ids 0,1,2`: the brokers get the node ids the user wants (Kafka's docker images number
them from 0); ids that repeat, are negative, do not match --brokers or are a controller's are refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.cli import build_parser
from minikafka.deploy import cli as deploy_cli
from minikafka.deploy.local_cluster import ClusterError, plan_cluster


def test_brokers_take_the_ids_given(tmp_path: Path) -> None:
    cluster = plan_cluster(tmp_path, 3, 3, broker_ids=[0, 1, 2])
    assert [b.node_id for b in cluster.brokers] == [0, 1, 2]
    assert [c.node_id for c in cluster.controllers] == [101, 102, 103]
    assert [b.label for b in cluster.brokers] == ["broker-0", "broker-1", "broker-2"]
    assert [b.node_id for b in plan_cluster(tmp_path, 1, 2).brokers] == [1, 2]  # the default


BAD = [([0, 0, 1], "distinct"), ([-1, 0, 1], "non-negative"), ([0, 1], "names 2"), ([0, 1, 101], "controllers")]


@pytest.mark.parametrize(("ids", "problem"), BAD)
def test_bad_ids_are_refused(tmp_path: Path, ids: list[int], problem: str) -> None:
    with pytest.raises(ClusterError, match=problem):
        plan_cluster(tmp_path, 3, 3, broker_ids=ids)


def test_the_command_line_reads_them_and_counts_the_brokers_from_them() -> None:
    args = build_parser().parse_args(["cluster", "up", "--broker-ids", "0,1,2"])
    assert args.broker_ids == [0, 1, 2] and args.brokers is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["cluster", "up", "--broker-ids", "0,x"])
    assert deploy_cli.node_ids("4, 5") == [4, 5]
