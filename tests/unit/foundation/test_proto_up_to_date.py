"""The committed generated protobuf code must match what `make proto` would generate now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_generated_code_is_up_to_date(repo_root: Path, tmp_path: Path) -> None:
    protos = sorted(str(p.relative_to(repo_root)) for p in (repo_root / "proto" / "minikafka" / "pb").glob("*.proto"))
    assert protos, "no .proto sources"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "grpc_tools.protoc",
            "-Iproto",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            *protos,
        ],
        cwd=repo_root,
        check=True,
    )
    generated = {p.relative_to(tmp_path) for p in tmp_path.rglob("*.py*") if p.is_file()}
    committed_dir = repo_root / "src"
    stale = (
        [str(rel) for rel in sorted(generated) if (committed_dir / rel).read_bytes() != (tmp_path / rel).read_bytes()]
        if all((committed_dir / rel).exists() for rel in generated)
        else ["missing files"]
    )
    assert not stale, f"generated code is stale, run `make proto`: {stale}"
    committed = {p.relative_to(committed_dir) for p in (committed_dir / "minikafka" / "pb").glob("*_pb2*.py*")}
    assert committed == generated, (
        f"generated modules without a .proto source: {sorted(map(str, committed - generated))}"
    )
