"""A compose broker's healthcheck: healthy once the broker is registered and unfenced, as its own metadata says.

A broker answers Metadata only after it has caught up with the metadata log, and lists only the brokers unfenced
in its metadata image: so it lists itself once the controller has committed its registration and unfenced it,
which is when it can lead and follow partitions. Answering a client alone (`topics list`) comes earlier.

Usage: python -m minikafka.deploy.compose_health BROKER_ID HOST:PORT   (exit 0 healthy, 1 not yet)
"""

from __future__ import annotations

import sys

from minikafka.common.cli_support import CliError
from minikafka.common.errors import KafkaError

HEALTH_TIMEOUT_S = 4.0  # under the compose healthcheck's 5 s timeout, so the answer is ours and not the engine's


def broker_health(broker_id: int, address: str, timeout_s: float = HEALTH_TIMEOUT_S) -> str | None:
    """None when `address` (broker `broker_id`) lists itself among the unfenced brokers, else why not."""
    from minikafka.client.admin import AdminClient

    with AdminClient(bootstrap_servers=[address], timeout_s=timeout_s) as admin:
        try:
            response = admin.metadata(servers=[address])
        except KafkaError as error:
            return str(error)
    listed = sorted(broker.node_id for broker in response.brokers)
    if broker_id not in listed:
        return f"broker {broker_id} is not registered and unfenced yet (unfenced brokers: {listed or 'none'})"
    return None


def main(argv: list[str]) -> int:
    try:
        if len(argv) != 2:
            raise CliError("usage: python -m minikafka.deploy.compose_health BROKER_ID HOST:PORT")
        broker_id, address = int(argv[0]), argv[1]
    except ValueError:
        print(f"compose_health: not a broker id: {argv[0]!r}", file=sys.stderr)
        return 2
    except CliError as error:
        print(f"compose_health: {error}", file=sys.stderr)
        return 2
    problem = broker_health(broker_id, address)
    if problem is not None:
        print(f"broker {broker_id} not healthy: {problem}")
        return 1
    print(f"broker {broker_id} registered and unfenced")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
