"""Kafka's config resources as a broker sees them: the type numbers, and which broker names this broker answers."""

from __future__ import annotations

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4  # Kafka's ConfigResource.Type


def broker_name_problem(name: str, node_id: int) -> str | None:
    """None when a BROKER resource is this broker's or the cluster default (""); else Kafka's message (the
    AdminClient sends a broker's resource to that broker)."""
    if name == "":
        return None
    if not name.isdigit():
        return f"Broker id must be an integer, but it is: {name}"
    if int(name) != node_id:
        return f"Unexpected broker id, expected {node_id} or empty string, but received {name}"
    return None
