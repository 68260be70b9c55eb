"""`minikafka features describe`: Kafka's kafka-features describe through a broker's Kafka listener. The supported
and finalized feature levels come from ApiVersions v4, as Kafka's Admin.describeFeatures reads them: which
transaction protocol (transaction.version) and eligible-leader-replicas rule the cluster runs. The levels are set
by the controllers' settings of the same names; there is no upgrade here."""

from __future__ import annotations

import argparse
from dataclasses import asdict, dataclass

from minikafka.client.consumer_groups_command import kafka_bootstrap
from minikafka.client.kafka_wire_client import KafkaWireClient, request_class
from minikafka.common.cli_support import CliError, print_json, run_event_loop
from minikafka.common.errors import ErrorCode, KafkaError

API_VERSIONS = 18


@dataclass(frozen=True)
class FeatureLine:
    feature: str
    supported_min_version: int
    supported_max_version: int
    finalized_version_level: int  # 0: not finalized (Kafka lists no level-0 feature as finalized)
    epoch: int  # the metadata offset the finalized levels were read at


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("features", help="describe the cluster's feature levels (kafka-features)")
    commands = parser.add_subparsers(dest="features_command", required=True, metavar="{describe}")
    describe = commands.add_parser("describe", help="supported and finalized levels of each feature")
    describe.add_argument("--json", action="store_true")
    describe.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    describe.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's Kafka listener")
    describe.set_defaults(func=features_describe)


async def describe_features(client: KafkaWireClient) -> list[FeatureLine]:
    response = await client.any_broker(
        request_class(API_VERSIONS, 4)(client_software_name="minikafka", client_software_version="1")
    )
    error = ErrorCode.of(response.error_code)
    if error != ErrorCode.NONE:
        raise KafkaError(error, "ApiVersions")
    finalized = {f.name: int(f.max_version_level) for f in response.finalized_features}
    return [
        FeatureLine(f.name, int(f.min_version), int(f.max_version), finalized.get(f.name, 0),
                    int(response.finalized_features_epoch))
        for f in sorted(response.supported_features, key=lambda f: f.name)
    ]  # fmt: skip


def features_describe(args: argparse.Namespace) -> int:
    client = KafkaWireClient(kafka_bootstrap(args))

    async def run() -> list[FeatureLine]:
        try:
            return await describe_features(client)
        finally:
            await client.close()

    try:
        lines = run_event_loop(run())
    except KafkaError as error:
        raise CliError(f"{error.code.name}: {error.message}") from None
    if args.json:
        print_json([asdict(line) for line in lines])
        return 0
    for line in lines:
        print(
            f"Feature: {line.feature}\tSupportedMinVersion: {line.supported_min_version}\t"
            f"SupportedMaxVersion: {line.supported_max_version}\tFinalizedVersionLevel: "
            f"{line.finalized_version_level}\tEpoch: {line.epoch}"
        )
    return 0
