"""The `minikafka controller` command."""

from __future__ import annotations

import argparse
from pathlib import Path

from minikafka.common.cli_support import CliError, add_config_arguments, run_event_loop
from minikafka.common.config import load_config_file, parse_overrides
from minikafka.kraft_controller.config import ControllerConfig


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("controller", help="run one KRaft controller process")
    add_config_arguments(parser)
    parser.set_defaults(func=run_controller)
    test = subparsers.add_parser(
        "test-kraft-server",
        help="Kafka's TestRaftServer: one voter of a KRaft quorum whose leader writes a workload instead of "
        "running the controller; prints commits/s and commit latency (the quorum alone, for benchmarks)",
    )
    add_config_arguments(test)
    test.add_argument(
        "--workload",
        choices=("records", "controller"),
        default="records",
        help="records: opaque records, no controller (Kafka's tool); controller: each voter runs the controller "
        "and the leader submits broker registrations and topic creations to it in-process",
    )
    test.add_argument(
        "--num-records",
        type=int,
        default=5000,
        help="records the leader writes (controller: broker registrations; a tenth as many topic creations)",
    )
    test.add_argument("--record-size", type=int, default=64, help="bytes of each record (records workload)")
    test.add_argument("--outstanding", type=int, default=64, help="writes awaiting their commit at a time")
    test.add_argument(
        "--sequential",
        type=int,
        default=200,
        help="writes first made one at a time, for the commit latency (records: of --num-records; controller: "
        "registrations before the rest)",
    )
    test.set_defaults(func=run_test_raft_server)


def load(args: argparse.Namespace) -> ControllerConfig:
    return load_config_file(ControllerConfig, Path(args.config), parse_overrides(args.set))


def run_controller(args: argparse.Namespace) -> int:
    from minikafka.common.event_log import configure_event_log
    from minikafka.kraft_controller.process import run_controller_process

    config = load(args)
    configure_event_log(config.label, config.events_dir, config.log_level)
    run_event_loop(run_controller_process(config))
    return 0


def run_test_raft_server(args: argparse.Namespace) -> int:
    from minikafka.common.event_log import configure_event_log
    from minikafka.kraft_controller.controller_workload import ControllerWorkload
    from minikafka.kraft_controller.test_raft_server import RaftWorkload, run_test_raft_server

    for name in ("num_records", "record_size", "outstanding"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be at least 1")
    if args.sequential < 0:
        raise CliError("--sequential must not be negative")
    config = load(args)
    configure_event_log(config.label, config.events_dir, config.log_level)
    workload: RaftWorkload | ControllerWorkload
    if args.workload == "controller":
        workload = ControllerWorkload(args.num_records, args.outstanding, sequential=args.sequential)
    else:
        workload = RaftWorkload(args.num_records, args.record_size, args.outstanding, args.sequential)
    return run_event_loop(run_test_raft_server(config, workload))
