"""`topics describe --json` carries KIP-966's ELR and LastKnownElr beside the ISR."""

from __future__ import annotations

from minikafka.client.admin import PartitionDescription


def test_partition_description_json_has_the_elr() -> None:
    described = PartitionDescription(0, -1, 3, 9, [1, 2, 3], [], elr=[2], last_known_elr=[1])
    assert described.to_json() == {
        "partition": 0,
        "leader": -1,
        "leader_epoch": 3,
        "partition_epoch": 9,
        "replicas": [1, 2, 3],
        "isr": [],
        "elr": [2],
        "last_known_elr": [1],
    }
