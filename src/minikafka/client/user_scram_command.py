"""`minikafka configs --entity-type users`: SCRAM credentials as Kafka's kafka-configs sets them.

    minikafka configs --alter --entity-type users --entity-name alice \\
        --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-secret],SCRAM-SHA-256=[password=alice-secret]'
    minikafka configs --alter --entity-type users --entity-name alice --delete-config SCRAM-SHA-256
    minikafka configs --describe --entity-type users [--entity-name alice] [--json]

The password is salted here (PBKDF2, a random salt); only the salt, the iterations and the salted password go to
the controller, which stores StoredKey and ServerKey (AlterUserScramCredentials)."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import dataclass

from minikafka.common.cli_support import CliError, print_json
from minikafka.common.errors import ErrorCode, KafkaError
from minikafka.common.scram import DEFAULT_ITERATIONS, ScramMechanism, salted_password

SALT_BYTES = 32
_ITEM = re.compile(r"\s*([A-Z0-9-]+)=\[([^\]]*)\]\s*(?:,|$)")


@dataclass(frozen=True)
class ScramConfig:
    mechanism: ScramMechanism
    password: str
    iterations: int


def register(subparsers: argparse._SubParsersAction, add_connection_arguments) -> None:  # noqa: ANN001
    configs = subparsers.add_parser(
        "configs", help="dynamic topic and broker configs, and SCRAM credentials of users, as kafka-configs"
    )
    action = configs.add_mutually_exclusive_group(required=True)
    action.add_argument("--alter", action="store_true")
    action.add_argument("--describe", action="store_true")
    configs.add_argument("--entity-type", required=True, choices=["topics", "brokers", "users"])
    configs.add_argument("--entity-name", metavar="NAME", help="a topic, a broker id or a user")
    configs.add_argument(
        "--entity-default", action="store_true", help="brokers: the cluster-wide default every broker reads"
    )
    configs.add_argument(
        "--add-config", metavar="k=v,...", help="k1=v1,k2=[a,b]; users: 'SCRAM-SHA-512=[iterations=N,password=P]'"
    )
    configs.add_argument("--delete-config", metavar="k1,k2")
    configs.add_argument(
        "--all",
        action="store_true",
        help="with --describe: every config of the topic or broker (its Kafka listener's DescribeConfigs), not only "
        "the dynamic ones",
    )
    configs.add_argument("--json", action="store_true")
    add_connection_arguments(configs)
    configs.set_defaults(func=configs_command)


def parse_add_config(text: str) -> list[ScramConfig]:
    """Kafka's `MECHANISM=[iterations=N,password=P],...` (iterations default 4096; a password holds no `,` or `]`)."""
    configs, position = [], 0
    while position < len(text):
        match = _ITEM.match(text, position)
        if match is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"--add-config {text!r}: expected MECHANISM=[password=...],...")
        configs.append(_scram_config(match.group(1), match.group(2)))
        position = match.end()
    if not configs:
        raise KafkaError(ErrorCode.INVALID_CONFIG, "--add-config is empty")
    return configs


def _scram_config(name: str, body: str) -> ScramConfig:
    mechanism = _mechanism(name)
    values = dict(part.partition("=")[::2] for part in body.split(",") if part)
    unknown = sorted(set(values) - {"iterations", "password"})
    if unknown or "password" not in values:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name}=[...] takes password and optionally iterations")
    try:
        iterations = int(values.get("iterations", DEFAULT_ITERATIONS))
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"{name}: iterations must be a number") from None
    return ScramConfig(mechanism, values["password"], iterations)


def _mechanism(name: str) -> ScramMechanism:
    mechanism = ScramMechanism.of_name(name.strip())
    if mechanism is None:
        raise KafkaError(ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"unknown SCRAM mechanism {name!r}")
    return mechanism


def configs_command(args: argparse.Namespace) -> int:
    from minikafka.client.command_connection import admin_client

    if args.all:
        return _describe_all(args)
    with admin_client(args) as admin:
        if args.entity_type != "users":
            from minikafka.client import dynamic_configs_command

            return dynamic_configs_command.command(admin, args)
        if args.describe:
            return _describe(admin, args)
        return _alter(admin, args)


def _describe_all(args: argparse.Namespace) -> int:
    from minikafka.client import describe_all_configs, dynamic_configs_command

    if not args.describe or args.entity_type == "users":
        raise CliError("--all goes with --describe, for topics or brokers")
    entity = dynamic_configs_command.entity_of(args)
    return describe_all_configs.describe_all(args, entity.resource_type, entity.name, entity.described())


def _alter(admin, args: argparse.Namespace) -> int:  # noqa: ANN001 - client.admin.AdminClient
    from minikafka.pb import controller_pb2

    if not args.entity_name:
        raise CliError("--alter needs --entity-name USER")
    if not args.add_config and not args.delete_config:
        raise CliError("--alter needs --add-config or --delete-config")
    request = controller_pb2.AlterUserScramCredentialsRequest
    upsertions = []
    for config in parse_add_config(args.add_config) if args.add_config else []:
        salt = os.urandom(SALT_BYTES)
        salted = salted_password(config.mechanism, config.password, salt, config.iterations)
        upsertions.append(
            request.Upsertion(
                name=args.entity_name,
                mechanism=int(config.mechanism),
                iterations=config.iterations,
                salt=salt,
                salted_password=salted,
            )
        )
    names = [name for name in (args.delete_config or "").split(",") if name.strip()]
    deletions = [request.Deletion(name=args.entity_name, mechanism=int(_mechanism(name))) for name in names]
    for result in admin.alter_user_scram_credentials(deletions, upsertions):
        if result.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(result.error_code), f"user {result.user!r}: {result.error_message}")
    print(f"Completed updating config for user {args.entity_name}.")
    return 0


def _describe(admin, args: argparse.Namespace) -> int:  # noqa: ANN001 - client.admin.AdminClient
    results = admin.describe_user_scram_credentials([args.entity_name] if args.entity_name else None)
    rows = []
    for result in results:
        if result.error_code != ErrorCode.NONE:
            raise KafkaError(ErrorCode.of(result.error_code), f"user {result.user!r}: {result.error_message}")
        credentials = [
            {"mechanism": ScramMechanism(info.mechanism).mechanism_name, "iterations": info.iterations}
            for info in result.credential_infos
        ]
        rows.append({"user": result.user, "credentials": credentials})
    if args.json:
        print_json(rows)
        return 0
    for row in rows:
        described = ",".join(f"{c['mechanism']}=iterations={c['iterations']}" for c in row["credentials"])
        print(f"SCRAM credential configs for user-principal '{row['user']}' are {described}")
    return 0
