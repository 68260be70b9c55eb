"""`minikafka features`, Kafka's kafka-features. `describe`: through a broker's Kafka listener, the supported and
finalized feature levels from ApiVersions v4, as Kafka's Admin.describeFeatures reads them: which transaction
protocol (transaction.version) and eligible-leader-replicas rule the cluster runs. `upgrade` and `downgrade
[--unsafe]` `--feature transaction.version=N` (repeatable, `--dry-run` to check only): UpdateFeatures, on a broker's
Kafka listener (forwarded to the active controller) or with `--protocol grpc` at the active controller itself. The
request is all or nothing; each feature gets a line as Kafka's tool prints it, and the command exits 1 if any failed.
eligible.leader.replicas.version stays set by the controllers' setting of that name, kraft.version by
`metadata-quorum upgrade`."""

from __future__ import annotations

import argparse
import datetime
from dataclasses import asdict, dataclass

from minikafka.client.command_connection import add_connection_arguments
from minikafka.client.consumer_groups_command import kafka_bootstrap
from minikafka.client.kafka_wire_client import KafkaWireClient, request_class
from minikafka.common.cli_support import CliError, print_json, run_event_loop
from minikafka.common.errors import ErrorCode, KafkaError

API_VERSIONS = 18
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3  # Kafka's FeatureUpdate.UpgradeType


@dataclass(frozen=True)
class FeatureLine:
    feature: str
    supported_min_version: int
    supported_max_version: int
    finalized_version_level: int  # 0: not finalized (Kafka lists no level-0 feature as finalized)
    epoch: int  # the metadata offset the finalized levels were read at


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("features", help="describe the cluster's feature levels (kafka-features)")
    commands = parser.add_subparsers(dest="features_command", required=True, metavar="{describe,upgrade,downgrade}")
    describe = commands.add_parser("describe", help="supported and finalized levels of each feature")
    describe.add_argument("--json", action="store_true")
    describe.add_argument("--dir", metavar="RUN", help="the run directory (default: the newest under ./runs/)")
    describe.add_argument("--bootstrap-server", metavar="HOST:PORT", help="any broker's Kafka listener")
    describe.set_defaults(func=features_describe)
    for name, what in (("upgrade", "raise"), ("downgrade", "lower")):
        change = commands.add_parser(name, help=f"{what} finalized feature levels (UpdateFeatures)")
        change.add_argument(
            "--feature", action="append", required=True, metavar="NAME=LEVEL", help="e.g. transaction.version=2"
        )
        change.add_argument("--dry-run", action="store_true", help="validate only: the controller writes nothing")
        if name == "downgrade":
            change.add_argument("--unsafe", action="store_true", help="an unsafe downgrade (Kafka's --unsafe)")
        change.add_argument(
            "--protocol",
            choices=("kafka", "grpc"),
            default="kafka",
            help="kafka: a broker's Kafka listener (default, as kafka-features --bootstrap-server); grpc: the "
            "active controller's gRPC listener",
        )
        add_connection_arguments(change)
        change.set_defaults(func=features_update, downgrade=name == "downgrade")


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


@dataclass(frozen=True)
class FeatureChange:
    feature: str
    level: int
    upgrade_type: int


def parse_changes(args: argparse.Namespace) -> list[FeatureChange]:
    kind = (UNSAFE_DOWNGRADE if args.unsafe else SAFE_DOWNGRADE) if args.downgrade else UPGRADE
    changes = []
    for text in args.feature:
        name, sep, level = text.partition("=")
        if not sep or not name or not level.strip().lstrip("-").isdigit():
            raise CliError(f"--feature {text}: expected NAME=LEVEL, e.g. transaction.version=2")
        changes.append(FeatureChange(name.strip(), int(level), kind))
    if len({c.feature for c in changes}) != len(changes):
        raise CliError("a feature may be given once")
    return changes


async def update_features(client: KafkaWireClient, changes: list[FeatureChange], validate_only: bool) -> None:
    """UpdateFeatures v1 at any broker, which forwards it to the active controller; KafkaError on a refusal."""
    from kio.schema.update_features.v1 import request as features_v1
    from kio.static.primitive import i8, i16, i32Timedelta

    keys = tuple(
        features_v1.FeatureUpdateKey(feature=c.feature, max_version_level=i16(c.level), upgrade_type=i8(c.upgrade_type))
        for c in changes
    )
    timeout = i32Timedelta.parse(datetime.timedelta(seconds=30))
    response = await client.any_broker(
        features_v1.UpdateFeaturesRequest(timeout=timeout, feature_updates=keys, validate_only=validate_only)
    )
    error = ErrorCode.of(response.error_code)
    if error != ErrorCode.NONE:
        raise KafkaError(error, response.error_message or "")
    for result in response.results:
        if ErrorCode.of(result.error_code) != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(result.error_code), result.error_message or "")


def features_update(args: argparse.Namespace) -> int:
    changes = parse_changes(args)
    try:
        if args.protocol == "grpc":
            from minikafka.client.command_connection import admin_client

            with admin_client(args) as admin:
                admin.update_features([(c.feature, c.level, c.upgrade_type) for c in changes], args.dry_run)
        else:
            client = KafkaWireClient(kafka_bootstrap(args))

            async def run() -> None:
                try:
                    await update_features(client, changes, args.dry_run)
                finally:
                    await client.close()

            run_event_loop(run())
        refused: KafkaError | None = None
    except KafkaError as error:
        refused = error
    action = "downgrade" if args.downgrade else "upgrade"
    for change in changes:
        if refused is not None:
            print(f"Could not {action} {change.feature} to {change.level}. {refused.code.name}: {refused.message}")
        elif args.dry_run:
            print(f"{change.feature} can be {action}d to {change.level}.")
        else:
            print(f"{change.feature} was {action}d to {change.level}.")
    if refused is not None:
        raise CliError(f"{len(changes)} out of {len(changes)} operation(s) failed.")
    return 0
