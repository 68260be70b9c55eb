"""Without the `analysis` extra or Java, analyze (and demo, chaos with their analysis) refuse in one line before
starting anything, instead of a traceback from inside Spark."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from minikafka.cli import main


def test_analyze_without_pyspark_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logs").mkdir()
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    assert main(["analyze", str(tmp_path)]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "pyspark" in line and "minikafka[analysis]" in line


def test_demo_without_java_is_one_line_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert main(["demo", "--records", "10"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "Java" in line
    assert not (tmp_path / "runs").exists()
