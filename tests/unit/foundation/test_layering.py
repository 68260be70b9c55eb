"""The rules on imports: pure cores touch no I/O, layers depend downwards only."""

from __future__ import annotations

import ast
from pathlib import Path

from source_trees import parse_file

SRC = Path(__file__).resolve().parents[3] / "src" / "minikafka"

# Pure protocol cores (no asyncio, grpc, time, random or os; no file I/O), listed as they land; each must exist.
PURE_MODULES = [
    "kraft_controller/raft/core.py",
    "kraft_controller/raft/quorum.py",
    "kraft_controller/raft/messages.py",
    "kraft_controller/raft/append_linger.py",
    "kraft_controller/raft/request_validation.py",
    "kraft_controller/metadata/records.py",
    "kraft_controller/metadata/image.py",
    "kraft_controller/metadata/snapshot.py",
    "kraft_controller/control",
    "broker/replica",
    "broker/lifecycle.py",
    "broker/fetch_session.py",
    "broker/fetch_session_handler.py",
    "broker/follower_fetch_states.py",
    "storage/log_validator.py",
    "storage/cleaner_plan.py",
    "common/compression.py",
    "storage/producer_state.py",
    "broker/group/state.py",
    "broker/group/rebalance.py",
    "broker/group/membership.py",
    "broker/group/offsets.py",
    "broker/group/loader.py",
    "broker/group/records.py",
    "broker/group/effects.py",
    "broker/consumer_group",
    "broker/transaction/state.py",
    "broker/transaction/core.py",
    "broker/transaction/records.py",
    "storage/producer_state.py",
    "common/control_batch.py",
    "broker/grpc_sasl/session.py",
    "common/scram_client.py",
    "client/sasl_exchange.py",
]
FORBIDDEN_IN_PURE = {
    "asyncio",
    "grpc",
    "time",
    "random",
    "os",
    "socket",
    "threading",
    "subprocess",
    "shutil",
    "pathlib",
    "io",
    "uvloop",
}


def imported_modules(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(parse_file(path)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def layer(module: str) -> str:
    """The project layer a module belongs to (`minikafka.broker.x` -> `broker`), or its top-level name otherwise."""
    parts = module.split(".")
    return parts[1] if parts[0] == "minikafka" and len(parts) > 1 else parts[0]


def python_files(relative: str) -> list[Path]:
    path = SRC / relative
    return sorted(path.rglob("*.py")) if path.is_dir() else [path]


def existing_pure_files() -> list[Path]:
    return [f for rel in PURE_MODULES if (SRC / rel).exists() for f in python_files(rel)]


def test_pure_cores_import_no_io() -> None:
    offenders = []
    for path in existing_pure_files():
        for name in imported_modules(path):
            if layer(name) in FORBIDDEN_IN_PURE:
                offenders.append(f"{path.relative_to(SRC)} imports {name}")
    assert not offenders, offenders


def test_pure_cores_open_no_files() -> None:
    offenders = [
        f"{path.relative_to(SRC)} calls open()"
        for path in existing_pure_files()
        for node in ast.walk(parse_file(path))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"
    ]
    assert not offenders, offenders


def test_client_imports_no_server_code() -> None:
    offenders = [
        f"{path.relative_to(SRC)} imports {name}"
        for path in python_files("client")
        for name in imported_modules(path)
        if layer(name) in {"broker", "kraft_controller", "deploy", "storage"}
    ]
    assert not offenders, offenders


def test_nothing_imports_broker_or_upper_layers() -> None:
    upper = {
        "kraft_controller": {"broker", "client", "deploy"},
        "common": {"broker", "client", "deploy", "kraft_controller"},
        "broker": {"client", "deploy"},
        "client": {"deploy"},
    }
    offenders = []
    for package, forbidden in upper.items():
        for path in python_files(package):
            offenders += [
                f"{path.relative_to(SRC)} imports {name}" for name in imported_modules(path) if layer(name) in forbidden
            ]
    assert not offenders, offenders


def test_one_top_level_package() -> None:
    """Everything installs under `minikafka.`, so nothing generic (`common`, `client`) lands in site-packages."""
    from setuptools import find_packages

    top_level = {name.split(".")[0] for name in find_packages(str(SRC.parent))}
    assert top_level == {"minikafka"}
