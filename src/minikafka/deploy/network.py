"""The network a run lives in, and the cuts between its nodes: where they are kept and how they are enforced.

Two modes, recorded in cluster.json's "network":
- netns (root or CAP_NET_ADMIN): the run has a network namespace of its own; every node runs inside it, and cuts
  are nftables rules in that namespace only (never in the host's). Tools reach the nodes by running inside the
  namespace: `minikafka` moves itself there (setns, else it runs again there with `ip netns exec`), `cluster exec`
  runs any other program there.
- host: nodes run on the host's loopback; cuts are enforced by each node's gRPC transport, which reads
  RUN/network/cuts.json (see common.grpc_support).
Either way RUN/network/cuts.json holds the active cuts and each node's address.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from minikafka.deploy.network_model import Cut, base_ruleset, cut_rules

NETWORK_MODES = ("netns", "host")


class NetworkError(Exception):
    """A namespace or rule operation failed; the message says which command and why."""


@dataclass(frozen=True)
class Network:
    mode: str  # "netns" | "host"
    namespace: str | None

    @property
    def cuts_mode(self) -> str:
        return "kernel" if self.mode == "netns" else "in-process"

    def to_json(self) -> dict:
        return {"mode": self.mode, "namespace": self.namespace}

    @classmethod
    def from_json(cls, entry: dict | None) -> Network:
        if not entry:
            return cls("host", None)
        return cls(entry["mode"], entry.get("namespace"))


HOST_NETWORK = Network("host", None)


def namespace_name(run_dir: Path) -> str:
    """A stable, short namespace name for a run directory (names are global to the host)."""
    return "minikafka-" + hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()[:10]


def may_create_namespaces() -> bool:
    """Root (or CAP_NET_ADMIN, checked by trying) with `ip` and `nft` installed."""
    if shutil.which("ip") is None or shutil.which("nft") is None:
        return False
    return os.geteuid() == 0 or _has_net_admin()


def _has_net_admin() -> bool:
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) & (1 << 12))
    return False


def default_mode() -> str:
    return "netns" if may_create_namespaces() else "host"


def choose(requested: str | None, run_dir: Path) -> Network:
    mode = requested or default_mode()
    if mode not in NETWORK_MODES:
        raise NetworkError(f"--network must be one of {', '.join(NETWORK_MODES)}, got {mode!r}")
    if mode == "netns" and not may_create_namespaces():
        raise NetworkError("--network netns needs root (or CAP_NET_ADMIN) and the `ip` and `nft` commands")
    return Network(mode, namespace_name(run_dir) if mode == "netns" else None)


def _run(command: list[str], stdin: str | None = None) -> None:
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip().splitlines()
        raise NetworkError(f"`{' '.join(command[:5])}` failed: {detail[-1] if detail else result.returncode}")


def namespace_exists(name: str) -> bool:
    return Path("/run/netns", name).exists()


def create_namespace(name: str, addresses: dict[int, str]) -> None:
    """The run's namespace with `lo` up and the base table loaded (before any node starts)."""
    if namespace_exists(name):
        delete_namespace(name)
    _run(["ip", "netns", "add", name])
    _run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"])
    _run(["ip", "netns", "exec", name, "nft", "-f", "-"], stdin=base_ruleset(addresses))


def prepare_namespace(name: str, addresses: dict[int, str]) -> None:
    """The run's namespace ready for its nodes: created here, or, when this process already runs in it (a command
    that entered it first, as chaos does), given its base table."""
    if inside(name):
        _run(["nft", "-f", "-"], stdin=base_ruleset(addresses))
    else:
        create_namespace(name, addresses)


def run_in_new_namespace(name: str, argv: list[str]) -> int:
    """Run this `minikafka` command in a new namespace `name` with `lo` up, removed when the command ends; for a
    command whose own clients must reach the nodes (chaos)."""
    delete_namespace(name)
    _run(["ip", "netns", "add", name])
    try:
        _run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"])
        command = subprocess.Popen(["ip", "netns", "exec", name, sys.executable, "-m", "minikafka.launcher", *argv])
        while True:
            try:
                return command.wait()
            except KeyboardInterrupt:  # the command inside got the same Ctrl-C: wait while it stops its cluster
                continue
    finally:
        delete_namespace(name)


def delete_namespace(name: str) -> None:
    if namespace_exists(name):
        _run(["ip", "netns", "del", name])


def inside(name: str) -> bool:
    """Whether this process already runs in namespace `name`."""
    try:
        return os.stat(f"/run/netns/{name}").st_ino == os.stat("/proc/self/ns/net").st_ino
    except OSError:
        return False


def command_prefix(network: Network) -> list[str]:
    """What to put before a command so it runs where the run's addresses are reachable."""
    if network.mode == "netns" and network.namespace and not inside(network.namespace):
        return ["ip", "netns", "exec", network.namespace]
    return []


def reexec_inside(network: Network, argv: list[str]) -> int | None:
    """Run this `minikafka` command inside the run's namespace: None when it runs here (already there, moved there
    in place, or host mode), else the exit status of the command run again there."""
    prefix = command_prefix(network)
    if not prefix or not namespace_exists(prefix[3]) or enter_namespace(prefix[3]):
        return None  # a run that is down has no namespace: the command runs here and reports it
    return subprocess.run([*prefix, sys.executable, "-m", "minikafka.launcher", *argv], check=False).returncode


CLONE_NEWNET = 0x40000000


def _threads() -> int:
    """This process's threads, the ones C libraries started too."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def enter_namespace(name: str) -> bool:
    """Move this process into the network namespace `name` in place (setns(2)), sparing a second interpreter start
    (about 0.85 CPU s of imports). Only while it runs a single thread: a namespace is a thread's, and threads
    started later inherit it. False when it cannot (the caller runs the command again there)."""
    if _threads() != 1:
        return False
    try:
        descriptor = os.open(f"/run/netns/{name}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return ctypes.CDLL(None, use_errno=True).setns(descriptor, CLONE_NEWNET) == 0 and inside(name)
    finally:
        os.close(descriptor)


# ---- the cuts file ----


def cuts_path(run_dir: Path) -> Path:
    return run_dir / "network" / "cuts.json"


def read_cuts(run_dir: Path) -> tuple[Cut, ...]:
    try:
        document = json.loads(cuts_path(run_dir).read_text())
    except FileNotFoundError:
        return ()
    return tuple(Cut.from_json(entry) for entry in document.get("active", []))


def write_cuts(
    run_dir: Path,
    network: Network,
    addresses: dict[int, str],
    cuts: tuple[Cut, ...],
    more_addresses: Mapping[str, int] | None = None,
) -> None:
    """Record the cuts (atomically: nodes re-read the file) and, in kernel mode, replace the namespace's rules.

    `addresses`: each node's host:port, kept in the file so a node's transport can name the peer it calls;
    `more_addresses`: a node's other gRPC listeners (a broker's inter-broker one), by address.
    """
    if network.mode == "netns":
        assert network.namespace is not None
        if not namespace_exists(network.namespace):
            raise NetworkError(f"the run's namespace {network.namespace} does not exist: is the run down?")
        hosts = {node_id: address.rpartition(":")[0] for node_id, address in addresses.items()}
        _run(["ip", "netns", "exec", network.namespace, "nft", "-f", "-"], stdin=cut_rules(cuts, hosts))
    path = cuts_path(run_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "mode": network.cuts_mode,
        "nodes": {**{address: node_id for node_id, address in addresses.items()}, **(more_addresses or {})},
        "active": [cut.to_json() for cut in cuts],
    }
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n")
    os.replace(temporary, path)
