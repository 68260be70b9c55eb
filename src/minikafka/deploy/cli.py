"""Deployment commands: the local cluster, fault injection, chaos, analysis, demo."""

from __future__ import annotations

import argparse
from pathlib import Path

from minikafka.common.cli_support import CliError, bounded_int, positive_float, print_json
from minikafka.common.config import parse_overrides
from minikafka.deploy import certs_command
from minikafka.deploy.chaos_schedule import CHAOS_TIMING, FAULT_KINDS, SIMULATOR_FAULTS
from minikafka.deploy.plan_timing_options import add_fault_overlap, add_plan_timing, plan_timing

# Every node is a real process on this machine: more than this is a typo, not a cluster.
MAX_NODES = 64
MAX_CHAOS_PARTITIONS = 10000
MAX_COMPACTED_KEYS = 10_000_000
FAULTS = (
    "kill",
    "stop",
    "start",
    "reboot",
    "pause",
    "resume",
    "hold-alter-partition",
    "release-alter-partition",
    "disk-full",
    "disk-error",
    "corrupt",
)
NETWORK_FAULTS = ("partition", "isolate", "heal")
STOP_TIMEOUT_HELP = (
    "SIGKILL a node still running S seconds after its SIGTERM (default: 330 for a broker, Kafka's 5-minute wait "
    "for its controlled shutdown's grant and its closing; 30 for a controller); 0 kills at once. A node that "
    "stopped using CPU for 30 s is killed sooner"
)
# Commands that need no connection to the nodes, so they run on the host even when the run lives in a namespace.
HOST_COMMANDS = {("cluster", "up"), ("cluster", "down"), ("cluster", "exec")} | {
    ("fault", name) for name in (*FAULTS[:6], *NETWORK_FAULTS)
}


def non_negative_float(text: str) -> float:
    """An argparse `type` for a duration that may be zero."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text} is not a number") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text} is out of range: must be zero or a positive number")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    # The order of registration is the order `minikafka --help` lists the commands in.
    certs_command.register(subparsers)
    _register_cluster(subparsers)
    _register_fault(subparsers)
    _register_analyze(subparsers)
    _register_chaos(subparsers)
    _register_scenario(subparsers)
    _register_demo(subparsers)


def _register_cluster(subparsers: argparse._SubParsersAction) -> None:
    cluster = subparsers.add_parser("cluster", help="a local cluster of real processes")
    cluster_commands = cluster.add_subparsers(dest="cluster_command", required=True, metavar="{up,status,down,exec}")
    up = cluster_commands.add_parser("up", help="start controllers and brokers on free loopback ports")
    up.add_argument("--dir", metavar="RUN")
    up.add_argument("--controllers", type=bounded_int(1, MAX_NODES), default=3)
    up.add_argument("--brokers", type=bounded_int(1, MAX_NODES), default=None, help="how many (default 3)")
    up.add_argument(
        "--broker-ids", type=node_ids, metavar="ID,ID,...", help="the brokers' node ids (default 1..N), e.g. 0,1,2"
    )
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    up.add_argument(
        "--kafka-listener",
        action="append",
        default=[],
        metavar="NAME",
        help="another Kafka listener on every broker, on its own port, beside PLAINTEXT (repeatable); "
        "listener.security.protocol.map maps NAME to its protocol, e.g. --set listener.security.protocol.map="
        "PLAINTEXT:PLAINTEXT,SSL:SSL,GRPC:GRPC,BROKER:GRPC,CONTROLLER:GRPC",
    )
    up.add_argument(
        "--dynamic-quorum",
        action="store_true",
        help="format the controllers with the voter set by directory id (KIP-853, kraft.version 1)",
    )
    up.add_argument(
        "--initial-controllers",
        type=bounded_int(1, MAX_NODES),
        default=0,
        metavar="N",
        help="with --dynamic-quorum: only the first N controllers are voters; the others join as observers "
        "(metadata-quorum add-controller)",
    )
    up.add_argument("--timeout", type=positive_float, default=60.0, metavar="S", help="how long to wait for readiness")
    _add_network_argument(up)
    up.set_defaults(func=cluster_up)
    status = cluster_commands.add_parser("status", help="processes, liveness, fencing, broker epochs")
    status.add_argument("--dir", metavar="RUN")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cluster_status)
    down = cluster_commands.add_parser("down", help="stop every process of the run")
    down.add_argument("--dir", metavar="RUN")
    down.add_argument("--timeout", type=non_negative_float, metavar="S", help=STOP_TIMEOUT_HELP)
    down.set_defaults(func=cluster_down)
    execute = cluster_commands.add_parser("exec", help="run a program where the run's addresses are reachable")
    execute.add_argument("--dir", metavar="RUN")
    execute.add_argument("program", nargs=argparse.REMAINDER, metavar="-- CMD [ARGS...]")
    execute.set_defaults(func=cluster_exec)


def _register_fault(subparsers: argparse._SubParsersAction) -> None:
    fault = subparsers.add_parser("fault", help="inject a fault into a node of the run")
    fault_commands = fault.add_subparsers(
        dest="fault_command", required=True, metavar="{" + ",".join(FAULTS + NETWORK_FAULTS) + "}"
    )
    for name in FAULTS:
        command = fault_commands.add_parser(name)
        command.add_argument("node_id", type=bounded_int(0), metavar="ID")
        command.add_argument("--dir", metavar="RUN", help="with --compose: where logs/faults.jsonl goes")
        command.add_argument(
            "--compose",
            metavar="FILE",
            help="a docker-compose cluster (else MINIKAFKA_COMPOSE_FILE; else the local run)",
        )
        command.add_argument(
            "--engine", choices=("docker", "podman"), help="container engine (default: whichever is installed)"
        )
        if name == "stop":
            command.add_argument("--timeout", type=non_negative_float, metavar="S", help=STOP_TIMEOUT_HELP)
        if name == "reboot":
            command.add_argument("--lose-unflushed", action="store_true")
            command.add_argument("--wipe-disk", action="store_true")
        if name == "corrupt":
            command.add_argument("partition", metavar="TOPIC-PARTITION")
            command.add_argument("--offset", type=int, help="corrupt the batch holding this offset")
        command.set_defaults(func=run_fault)
    _register_network_faults(fault_commands)


def _register_analyze(subparsers: argparse._SubParsersAction) -> None:
    analyze = subparsers.add_parser("analyze", help="Spark analysis of a run: timelines, figures, invariants")
    analyze.add_argument("run", metavar="RUN")
    analyze.add_argument("--out", metavar="DIR")
    analyze.add_argument("--master", metavar="URL", default="local[2]")
    analyze.add_argument("--json", action="store_true")
    analyze.set_defaults(func=run_analyze_command)


def _register_chaos(subparsers: argparse._SubParsersAction) -> None:
    chaos = subparsers.add_parser("chaos", help="seeded workload with faults, then analysis")
    chaos.add_argument("run", metavar="RUN")
    chaos.add_argument("--duration", type=positive_float, required=True, metavar="S")
    chaos.add_argument(
        "--faults",
        default="kill,reboot",
        help=f"comma-separated: {','.join(k for k in FAULT_KINDS if k not in SIMULATOR_FAULTS)} (reassign: an "
        "operator's AlterPartitionReassignments reordering a partition's replicas, instantaneous)",
    )
    chaos.add_argument("--seed", type=int, default=0)
    add_fault_overlap(chaos)
    add_plan_timing(chaos, CHAOS_TIMING)
    chaos.add_argument("--brokers", type=bounded_int(3, MAX_NODES), default=3, help="at least 3 (RF 3)")
    chaos.add_argument("--controllers", type=bounded_int(1, MAX_NODES), default=3)
    chaos.add_argument("--partitions", type=bounded_int(1, MAX_CHAOS_PARTITIONS, error="INVALID_PARTITIONS"), default=3)
    chaos.add_argument("--producers", type=bounded_int(1, MAX_NODES), default=2)
    chaos.add_argument("--rate", type=positive_float, default=200.0, metavar="R", help="records/s per producer")
    chaos.add_argument(
        "--group-consumers",
        type=bounded_int(0, MAX_NODES),
        default=0,
        metavar="N",
        help="also N members of one consumer group, killed and restarted at random; every acknowledged record must "
        "be consumed by the group",
    )
    chaos.add_argument(
        "--group-protocol",
        choices=("classic", "consumer"),
        default="classic",
        help="the group consumers' group.protocol: classic, or consumer (KIP-848; the brokers' consumer session "
        "timeout is then 6 s)",
    )
    chaos.add_argument(
        "--transactional-producers",
        type=bounded_int(0, MAX_NODES),
        default=0,
        metavar="N",
        help="also N transactional producers writing transactions (every 4th aborted, every 5th cut short by a "
        "crash and fenced by a new session of its id) over every partition of topic chaos-txn, read back "
        "read_committed; analyze checks AbortedRead, TornTransaction and the LSO",
    )
    chaos.add_argument(
        "--acls",
        action="store_true",
        help="the StandardAuthorizer on, SASL PLAIN on the gRPC client listener, each producer its own principal "
        "with WRITE on the topic, and --denied-producers more whose writes the ACLs refuse; analyze checks "
        "NoDeniedWriteVisible",
    )
    chaos.add_argument(
        "--denied-producers",
        type=bounded_int(0, MAX_NODES),
        default=None,
        metavar="N",
        help="with --acls: N producers (default 3) refused in turn for no WRITE, a DENY beating an ALLOW, and no "
        "IDEMPOTENT_WRITE",
    )
    chaos.add_argument(
        "--compacted-keys",
        type=bounded_int(1, MAX_COMPACTED_KEYS),
        default=0,
        metavar="N",
        help="the chaos topic compacted (cleanup.policy=compact, small segments, a low min.cleanable.dirty.ratio), "
        "the producers overwriting N keys in turn; every key's latest acknowledged value must be read back "
        "(analyze: CompactedLatestValueKept), and the log must shrink",
    )
    chaos.add_argument("--no-analysis", action="store_true", help="skip the Spark analysis")
    chaos.add_argument("--json", action="store_true")
    _add_network_argument(chaos)
    chaos.set_defaults(func=run_chaos_command)


def _register_demo(subparsers: argparse._SubParsersAction) -> None:
    demo = subparsers.add_parser("demo", help="the whole story: cluster, workload with faults, analysis, report")
    demo.add_argument("--records", type=bounded_int(1), default=20000)
    demo.add_argument("--no-analysis", action="store_true", help="skip the Spark checks")
    demo.add_argument("--no-scenarios", action="store_true", help="skip the kip-903 scenario with its guard on and off")
    demo.set_defaults(func=run_demo_command)


def _add_network_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--network",
        choices=("netns", "host"),
        help="netns: a network namespace of the run's own, cuts by the kernel (default where permitted); "
        "host: the host's loopback, cuts by each node's transport",
    )


def _register_scenario(subparsers: argparse._SubParsersAction) -> None:
    scenario = subparsers.add_parser("scenario", help="replay a seed scenario with its guard on or off, with a verdict")
    commands = scenario.add_subparsers(dest="scenario_command", required=True, metavar="{list,run}")
    listing = commands.add_parser("list", help="the built-in scenarios and their guards")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=scenario_list)
    run = commands.add_parser("run", help="start a cluster, drive the scenario's steps, analyze, write scenario.md")
    run.add_argument("scenario", metavar="NAME|FILE.py")
    run.add_argument("--dir", metavar="RUN", help="a new run directory (default: a new one under ./runs/)")
    run.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE",
        help="cluster configs; the scenario's guard (e.g. alter.partition.broker.epoch.check=false) switches it off",
    )  # fmt: skip
    run.add_argument("--no-analysis", action="store_true", help="skip the Spark analysis")
    run.add_argument("--json", action="store_true")
    run.set_defaults(func=scenario_run)


def scenario_list(args: argparse.Namespace) -> int:
    from minikafka.deploy.scenario.registry import builtin

    scenarios = builtin()
    if args.json:
        print_json([s.to_json() for s in scenarios])
        return 0
    width = max(len(s.name) for s in scenarios) + 2
    for s in scenarios:
        print(f"{s.name:<{width}}{s.title}")
        print(f"{'':<{width}}guard: {s.guard.key} ({s.guard.on} guarded, {s.guard.off} unguarded)")
    return 0


def scenario_run(args: argparse.Namespace) -> int:
    import sys

    from minikafka.deploy.local_cluster import ClusterError
    from minikafka.deploy.scenario.registry import ScenarioError, load
    from minikafka.deploy.scenario.runner import run_scenario, to_json

    overrides = parse_overrides(args.set)
    try:
        scenario = load(args.scenario)
    except ScenarioError as error:
        raise CliError(str(error)) from None
    if not args.no_analysis:
        require_analysis()
    try:
        outcome = run_scenario(
            scenario, Path(args.dir) if args.dir else None, overrides, analyze=not args.no_analysis,
            log=lambda line: print(line, file=sys.stderr),
        )  # fmt: skip
    except (ScenarioError, ClusterError) as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json(to_json(outcome))
    else:
        print(outcome.verdict.line)
        print(f"report: {Path(outcome.run_dir) / 'report' / 'scenario.md'}")
    return outcome.verdict.exit_code


def require_analysis() -> None:
    """The Spark analysis needs the `analysis` extra and a Java runtime: say so in one line before starting."""
    import importlib.util
    import os
    import shutil

    missing = [name for name in ("pyspark", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:
        raise CliError(
            f"the analysis needs {' and '.join(missing)}: pip install 'minikafka[analysis]' "
            "(or skip it with --no-analysis where the command has it)"
        )
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise CliError("the analysis runs Spark, which needs Java: install a JRE (17 or later) or set JAVA_HOME")


def _register_network_faults(fault_commands: argparse._SubParsersAction) -> None:
    partition = fault_commands.add_parser("partition", help="drop traffic between two groups of nodes")
    partition.add_argument("first", metavar="A[,B...]")
    partition.add_argument("second", metavar="C[,D...]")
    partition.add_argument("--one-way", action="store_true", help="drop only the calls from the first group")
    isolate = fault_commands.add_parser("isolate", help="cut one node from every other node (clients still reach it)")
    isolate.add_argument("node_id", type=int, metavar="ID")
    heal = fault_commands.add_parser("heal", help="remove every cut, or those touching the given nodes")
    heal.add_argument("node_ids", type=int, nargs="*", metavar="ID")
    for command in (partition, isolate, heal):
        command.add_argument("--dir", metavar="RUN")
        command.add_argument("--json", action="store_true")
        command.set_defaults(func=run_network_fault)


def run_in_namespace(args: argparse.Namespace, argv: list[str]) -> int | None:
    """Run this command again inside the run's namespace when it talks to the nodes and the run lives in one.

    None when it runs here: not a run's command, the host's own commands, explicit addresses, or no such run.
    """
    from minikafka.deploy.local_cluster import Cluster, ClusterError, resolve_run_dir
    from minikafka.deploy.network import reexec_inside

    if args.command == "chaos":
        return _chaos_in_namespace(args, argv)
    subcommand = getattr(args, "cluster_command", None) or getattr(args, "fault_command", None)
    if not hasattr(args, "dir") or (args.command, subcommand) in HOST_COMMANDS:
        return None
    if not args.dir and (getattr(args, "bootstrap_server", None) or getattr(args, "bootstrap_controller", None)):
        return None
    try:
        cluster = Cluster.load(resolve_run_dir(args.dir))
    except ClusterError:
        return None  # the command itself reports the missing run
    return reexec_inside(cluster.network, argv)


def _chaos_in_namespace(args: argparse.Namespace, argv: list[str]) -> int | None:
    """Chaos's workload talks to its nodes from its own process: where its run gets a namespace, the whole command
    runs in it, so the cuts are the kernel's. None: it runs here (host mode, or already inside)."""
    import sys

    from minikafka.deploy.network import NetworkError, choose, inside, run_in_new_namespace

    try:
        network = choose(args.network, Path(args.run).resolve())
        if network.namespace is None or inside(network.namespace):
            return None
        return run_in_new_namespace(network.namespace, argv)
    except NetworkError as error:
        sys.stderr.write(f"minikafka chaos: error: {error}\n")
        return 1


def _cluster(args: argparse.Namespace):  # noqa: ANN202 - deploy.local_cluster.Cluster, imported lazily
    from minikafka.deploy.local_cluster import Cluster, ClusterError, resolve_run_dir

    try:
        return Cluster.load(resolve_run_dir(args.dir))
    except ClusterError as error:
        raise CliError(str(error)) from None


def node_ids(text: str) -> list[int]:
    """An argparse `type`: node ids separated by commas."""
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected node ids separated by commas, got {text!r}") from None


def cluster_up(args: argparse.Namespace) -> int:
    from minikafka.deploy import cluster_commands
    from minikafka.deploy.local_cluster import ClusterError

    try:
        cluster = cluster_commands.up(
            Path(args.dir) if args.dir else None,
            args.controllers,
            args.brokers if args.brokers is not None else len(args.broker_ids or ()) or 3,
            parse_overrides(args.set),
            args.timeout,
            args.network,
            args.broker_ids,
            args.dynamic_quorum,
            args.initial_controllers,
            args.kafka_listener,
        )
    except ClusterError as error:
        raise CliError(str(error)) from None
    print(f"cluster up in {cluster.run_dir}")
    print(f"  controllers: {', '.join(f'{c.node_id}@{c.address}' for c in cluster.controllers)}")
    print(f"  brokers:     {', '.join(f'{b.node_id}@{b.address}' for b in cluster.brokers)}")
    print(f"  bootstrap.servers={cluster.kafka_bootstrap_servers}")
    for name, addresses in cluster.further_kafka_bootstrap.items():
        print(f"  {name}: {addresses}")
    print(f"  network:     {_network_line(cluster.network.to_json(), cluster.network.cuts_mode)}")
    print(f"  Kafka clients: {cluster.kafka_client_properties} (bootstrap.servers and security; kcat -F FILE)")
    if cluster.client_properties.exists():
        print(f"  minikafka's tools given --dir log in to the brokers' gRPC listener with {cluster.client_properties}")
    return 0


def _network_line(network: dict, cuts: str) -> str:
    where = f"namespace {network['namespace']}" if network["namespace"] else "host loopback"
    return f"{network['mode']} ({where}; cuts {cuts})"


def cluster_status(args: argparse.Namespace) -> int:
    from minikafka.deploy import cluster_commands

    document = cluster_commands.status(_cluster(args))
    if args.json:
        print_json(document)
        return 0
    print(f"run {document['run_dir']}")
    for row in document["controllers"]:
        state = "alive" if row["alive"] else "down"
        print(
            f"  controller {row['id']:>4} {row['address']:<21} pid {row['pid']} {state}"
            f"{' LEADER' if row['leader'] else ''}"
        )
    for row in document["brokers"]:
        state = "alive" if row["alive"] else "down"
        fenced = {True: "fenced", False: "unfenced", None: "unknown"}[row["fenced"]]
        print(
            f"  broker     {row['id']:>4} {row['address']:<21} pid {row['pid']} {state} {fenced} "
            f"epoch {row['broker_epoch']}"
        )
    network = document["network"]
    print(f"  network    {_network_line(network, network['cuts'])}")
    for cut in network["active"]:
        arrow = "->" if cut["one_way"] else "<->"
        print(f"    cut {','.join(map(str, cut['from']))} {arrow} {','.join(map(str, cut['to']))}")
    for listener, security in document["security"]["listeners"].items():
        print(f"  listener   {listener}: {security}")
    return 0


def cluster_down(args: argparse.Namespace) -> int:
    from minikafka.deploy import cluster_commands

    stopped = cluster_commands.down(_cluster(args), args.timeout)
    print(f"stopped {', '.join(stopped) if stopped else 'nothing (no node was running)'}")
    return 0


def cluster_exec(args: argparse.Namespace) -> int:
    import subprocess

    from minikafka.deploy.network import command_prefix, namespace_exists

    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        raise CliError("no program given: `minikafka cluster exec [--dir RUN] -- CMD [ARGS...]`")
    cluster = _cluster(args)
    namespace = cluster.network.namespace
    if namespace is not None and not namespace_exists(namespace):
        raise CliError(f"the run's namespace {namespace} does not exist: is the run in {cluster.run_dir} down?")
    try:
        return subprocess.run([*command_prefix(cluster.network), *program], check=False).returncode
    except FileNotFoundError:
        raise CliError(f"no such program: {program[0]}") from None


def run_network_fault(args: argparse.Namespace) -> int:
    from minikafka.deploy.faults import Faults, describe_cut
    from minikafka.deploy.local_cluster import ClusterError
    from minikafka.deploy.network_model import Cut, CutError, parse_group

    faults = Faults(_cluster(args))
    cuts: tuple[Cut, ...]
    try:
        if args.fault_command == "partition":
            cuts = (faults.partition(parse_group(args.first), parse_group(args.second), args.one_way),)
        elif args.fault_command == "isolate":
            cuts = (faults.isolate(args.node_id),)
        else:
            cuts = faults.heal(tuple(args.node_ids))
    except (ClusterError, CutError) as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json({"fault": args.fault_command, "mode": faults.cluster.network.cuts_mode,
                    "cuts": [cut.to_json() for cut in cuts]})  # fmt: skip
    else:
        verb = "healed" if args.fault_command == "heal" else "cut"
        print(f"{args.fault_command}: {verb} {'; '.join(describe_cut(c) for c in cuts) or 'nothing'}"
              f" ({faults.cluster.network.cuts_mode})")  # fmt: skip
    return 0


def run_fault(args: argparse.Namespace) -> int:
    import os

    from minikafka.deploy.faults import Faults
    from minikafka.deploy.local_cluster import ClusterError

    compose = args.compose or os.environ.get("MINIKAFKA_COMPOSE_FILE")
    if compose:
        return run_compose_fault(args, Path(compose))
    faults = Faults(_cluster(args))
    name = args.fault_command.replace("-", "_")
    try:
        if name == "reboot":
            faults.reboot(args.node_id, args.lose_unflushed, args.wipe_disk)
        elif name == "corrupt":
            faults.corrupt(args.node_id, args.partition, args.offset)
        elif name == "stop":
            faults.stop(args.node_id, args.timeout)
        else:
            getattr(faults, name)(args.node_id)
    except ClusterError as error:
        raise CliError(str(error)) from None
    print(f"{args.fault_command} {args.node_id}: done")
    return 0


def run_compose_fault(args: argparse.Namespace, compose_file: Path) -> int:
    import os

    from minikafka.deploy.compose_faults import ComposeFaultError, choose_engine, inject

    if getattr(args, "lose_unflushed", False) or getattr(args, "wipe_disk", False):
        raise CliError("--lose-unflushed and --wipe-disk need a local run: a container restart keeps its volume")
    if getattr(args, "timeout", None) is not None:
        raise CliError("--timeout needs a local run: the compose file's stop_grace_period bounds a container's stop")
    run_dir = Path(args.dir) if args.dir else Path("runs") / "compose"
    try:
        engine = choose_engine(args.engine, os.environ)
        node = inject(compose_file, engine, args.fault_command, args.node_id, run_dir)
    except ComposeFaultError as error:
        raise CliError(str(error)) from None
    print(f"{args.fault_command} {node.service}: done ({engine}; recorded in {run_dir / 'logs' / 'faults.jsonl'})")
    return 0


def run_demo_command(args: argparse.Namespace) -> int:
    import sys

    from minikafka.deploy.demo import run_demo

    if not args.no_analysis:
        require_analysis()
    log = lambda line: print(line, file=sys.stderr)  # noqa: E731
    summary = run_demo(args.records, analyze=not args.no_analysis, log=log)
    print("\n".join(summary.lines()))
    passed = summary.lost == 0 and summary.analysis_passed is not False
    if not args.no_scenarios:
        from minikafka.deploy.demo import run_scenario_pair, side_by_side

        outcomes = run_scenario_pair(log)
        print("\n".join(side_by_side(outcomes)))
        # The unguarded run exists to show its loss: the demo went well when both runs did as predicted.
        passed = passed and all(outcome.verdict.as_predicted for outcome in outcomes)
    return 0 if passed else 1


def run_chaos_command(args: argparse.Namespace) -> int:
    import sys

    from minikafka.deploy.chaos import ChaosOptions, run_chaos
    from minikafka.deploy.chaos_schedule import parse_fault_kinds
    from minikafka.deploy.compacted_workload import compaction_lines
    from minikafka.deploy.demo import verdict_line
    from minikafka.deploy.local_cluster import ClusterError

    try:
        kinds = parse_fault_kinds(args.faults)
    except ValueError as error:
        raise CliError(str(error)) from None
    if simulator_only := [k for k in kinds if k in SIMULATOR_FAULTS]:
        raise CliError(f"{','.join(simulator_only)}: a simulator-only fault (minikafka simulate); chaos cannot run it")
    if args.denied_producers is not None and not args.acls:
        raise CliError("--denied-producers needs --acls")
    if args.compacted_keys and args.group_consumers:
        # The group must consume every acknowledged record, and a cleaner may remove one a later write replaced.
        raise CliError("--compacted-keys does not combine with --group-consumers")
    if not args.no_analysis:
        require_analysis()
    run = Path(args.run)
    if (run / "cluster.json").exists():
        raise CliError(f"{run} already holds a run; chaos starts its own cluster: give a new directory")
    options = ChaosOptions(
        args.duration, kinds, args.seed, args.brokers, args.controllers, args.partitions, args.producers, args.rate,
        group_consumers=args.group_consumers, group_protocol=args.group_protocol, analyze=not args.no_analysis,
        transactional_producers=args.transactional_producers, acls=args.acls,
        denied_producers=(3 if args.denied_producers is None else args.denied_producers) if args.acls else 0,
        compacted_keys=args.compacted_keys, overlap=args.overlap, max_at_once=args.max_at_once,
        timing=plan_timing(args),
    )  # fmt: skip
    try:
        summary = run_chaos(run, options, log=lambda line: print(line, file=sys.stderr if args.json else sys.stdout))
    except ClusterError as error:
        raise CliError(str(error)) from None
    if args.json:
        print_json(summary.to_json())
    else:
        print(f"run directory:  {summary.run_dir}")
        print(f"faults:         {len(summary.faults)} ({', '.join(f['kind'] for f in summary.faults) or 'none'})")
        print(f"acknowledged:   {summary.acknowledged} (acks=all; {summary.failed} not acknowledged)")
        print(f"consumed:       {summary.consumed}")
        print(f"lost:           {summary.lost}")
        if summary.group is not None:
            group = summary.group
            print(
                f"group:          {group['members']} members, {group['kills']} kills, {group['consumed']} records "
                f"consumed, {group['unconsumed']} acknowledged records never consumed by the group"
            )
        if summary.transactions is not None:
            txn = summary.transactions
            print(
                f"transactions:   {txn['committed']} committed ({txn['committed_records']} records), "
                f"{txn['aborted']} aborted ({txn['aborted_on_purpose']} on purpose), {txn['undecided']} commits "
                f"unanswered, {txn['restarts']} producer restarts, {txn.get('crashes', 0)} sessions crashed on purpose "
                "and fenced by the next"
            )
        if summary.compaction is not None:
            print(compaction_lines(summary.compaction))
        for principal, denied in (summary.denied or {}).items():
            errors = ", ".join(f"{name} x{count}" for name, count in sorted(denied["errors"].items()))
            print(
                f"denied:         {principal}: {denied['attempts']} attempts ({errors}), {denied['acknowledged']} "
                f"acknowledged, {denied['visible']} read back"
            )
        if summary.analysis is not None:
            print(f"invariants:     {verdict_line(summary.analysis)}")
            print(f"verdict:        {summary.analysis['verdict']}")
            print(f"report:         {summary.analysis['report']}")
    return 0 if summary.passed else 1


def run_analyze_command(args: argparse.Namespace) -> int:
    """Exit status: 0 pass, 1 fail, 3 incomplete (a final read did not reach every acknowledged record), 4 nothing
    to check (no acknowledged write)."""
    run = Path(args.run).resolve()
    if not (run / "logs").is_dir() and not (run / "history").is_dir():
        raise CliError(f"{run} has neither logs/ nor history/: is it a run directory?")
    require_analysis()
    from minikafka.deploy.analysis.report import analyze_run
    from minikafka.deploy.analysis.report_render import summary_lines
    from minikafka.deploy.analysis.verdict import EXIT_CODES

    summary = analyze_run(run, Path(args.out).resolve() if args.out else None, args.master)
    if args.json:
        print_json(summary)
    else:
        print("\n".join(summary_lines(summary)))
    return EXIT_CODES[summary["verdict"]]
