"""Deployment commands: the local cluster, fault injection, chaos, analysis, demo."""

from __future__ import annotations

import argparse

from common.cli_support import not_built

FAULTS = ("kill", "stop", "start", "reboot", "pause", "resume", "hold-alter-partition", "release-alter-partition")


def register(subparsers: argparse._SubParsersAction) -> None:
    cluster = subparsers.add_parser("cluster", help="a local cluster of real processes")
    cluster_commands = cluster.add_subparsers(dest="cluster_command", required=True, metavar="{up,status,down}")
    up = cluster_commands.add_parser("up", help="start controllers and brokers on free loopback ports")
    up.add_argument("--dir", metavar="RUN")
    up.add_argument("--controllers", type=int, default=3)
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    up.set_defaults(func=not_built("cluster up", 6))
    status = cluster_commands.add_parser("status", help="processes, liveness, fencing, broker epochs")
    status.add_argument("--dir", metavar="RUN")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=not_built("cluster status", 6))
    down = cluster_commands.add_parser("down", help="stop every process of the run")
    down.add_argument("--dir", metavar="RUN")
    down.set_defaults(func=not_built("cluster down", 6))

    fault = subparsers.add_parser("fault", help="inject a fault into a node of the run")
    fault_commands = fault.add_subparsers(dest="fault_command", required=True, metavar="{" + ",".join(FAULTS) + "}")
    for name in FAULTS:
        command = fault_commands.add_parser(name)
        command.add_argument("node_id", type=int, metavar="ID")
        command.add_argument("--dir", metavar="RUN")
        if name == "reboot":
            command.add_argument("--lose-unflushed", action="store_true")
            command.add_argument("--wipe-disk", action="store_true")
        command.set_defaults(func=not_built(f"fault {name}", 6))

    analyze = subparsers.add_parser("analyze", help="Spark analysis of a run: timelines, figures, invariants")
    analyze.add_argument("run", metavar="RUN")
    analyze.add_argument("--out", metavar="DIR")
    analyze.add_argument("--master", metavar="URL", default="local[2]")
    analyze.add_argument("--json", action="store_true")
    analyze.set_defaults(func=not_built("analyze", 7))

    chaos = subparsers.add_parser("chaos", help="seeded workload with faults, then analysis")
    chaos.add_argument("run", metavar="RUN")
    chaos.add_argument("--duration", type=float, required=True, metavar="S")
    chaos.add_argument("--faults", default="kill,reboot")
    chaos.add_argument("--seed", type=int, default=0)
    chaos.set_defaults(func=not_built("chaos", 7))

    demo = subparsers.add_parser("demo", help="the whole story: cluster, workload with faults, analysis, report")
    demo.set_defaults(func=not_built("demo", 6))
