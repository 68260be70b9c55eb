"""Finding a run directory: `--dir RUN`, or the newest run under ./runs/ (the default every command shares)."""

from __future__ import annotations

from pathlib import Path

DEFAULT_RUNS_DIR = Path("runs")


def newest_run(base: Path = DEFAULT_RUNS_DIR) -> Path | None:
    """The most recently modified run under `base` that holds a cluster.json."""
    runs = sorted((p for p in base.glob("*") if (p / "cluster.json").exists()), key=lambda p: p.stat().st_mtime)
    return runs[-1].resolve() if runs else None
