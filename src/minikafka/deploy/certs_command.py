"""`minikafka certs create`: a cluster CA and the nodes' and admin's certificates, for clusters `cluster up` does not
start (docker-compose)."""

from __future__ import annotations

import argparse
from pathlib import Path

from minikafka.common.cli_support import CliError


def _ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected node ids like 1,2,3, got {text!r}") from None
    if any(node_id < 0 for node_id in ids) or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"expected distinct non-negative node ids, got {text!r}")
    return ids


def register(subparsers: argparse._SubParsersAction) -> None:
    certs = subparsers.add_parser("certs", help="the cluster CA and node certificates for mutual TLS")
    commands = certs.add_subparsers(dest="certs_command", required=True, metavar="{create}")
    create = commands.add_parser(
        "create", help="a new CA, a certificate per node (CN controller-<id>/broker-<id>) and one for the admin"
    )
    create.add_argument("--dir", required=True, metavar="D", help="where ca.pem and <name>.pem/.key go")
    create.add_argument("--controllers", type=_ids, default=[], metavar="IDS", help="e.g. 101,102,103")
    create.add_argument("--brokers", type=_ids, default=[], metavar="IDS", help="e.g. 1,2,3")
    create.add_argument(
        "--host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name every node certificate is valid for (each node's own is its label, as a compose "
        "hostname), e.g. localhost for tools reaching published ports",
    )
    create.add_argument(
        "--ca-dir",
        metavar="CA",
        help="keep the CA's key (ca.key, with ca.pem) in CA instead of D, so D holds nothing that can sign "
        "(docker-compose keeps it in a volume only its certs service mounts)",
    )
    create.add_argument("--admin", default="admin", metavar="NAME", help="the admin certificate's CN (super.users)")
    create.add_argument(
        "--if-missing",
        action="store_true",
        help="do nothing when D already holds a CA (a restarted compose project keeps the certificates its nodes use)",
    )
    create.set_defaults(func=certs_create)


def certs_create(args: argparse.Namespace) -> int:
    from minikafka.common.certificates import CertificateRequest, ca_certificate_path, create_certificates

    if not args.controllers and not args.brokers:
        raise CliError("no node given: pass --controllers and/or --brokers")
    overlap = set(args.controllers) & set(args.brokers)
    if overlap:
        raise CliError(f"node id {min(overlap)} is both a controller and a broker")
    labels = [f"controller-{i}" for i in args.controllers] + [f"broker-{i}" for i in args.brokers]
    requests = [CertificateRequest(label, (label, *args.host)) for label in labels]
    directory = Path(args.dir)
    if args.if_missing and ca_certificate_path(directory).exists():
        print(f"certificates kept: {ca_certificate_path(directory)} exists")
        return 0
    try:
        ca_directory = Path(args.ca_dir) if args.ca_dir else None
        create_certificates(directory, [*requests, CertificateRequest(args.admin)], ca_directory)
    except OSError as error:
        raise CliError(f"cannot write certificates to {directory}: {error}") from None
    kept = f"; the CA's key in {args.ca_dir}" if args.ca_dir else ""
    print(f"certificates for {', '.join([*labels, args.admin])} and their CA (ca.pem) in {directory}{kept}")
    return 0
