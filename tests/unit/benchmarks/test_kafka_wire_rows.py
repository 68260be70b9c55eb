"""kafka_wire.py's produce rows: each side's CPU per MB beside its MB/s, and the ratio that CPU allows, printed under
the ratio `run_all` guards (benchmarks/kafka_wire.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).parents[3] / "benchmarks"
sys.path.append(str(BENCHMARKS))  # the benchmarks are scripts, not a package

from kafka_wire import ProduceRound, print_rows, produce_row  # noqa: E402 - found on the path added above


def test_a_produce_row_has_each_sides_median_cpu_and_the_ratio_it_allows() -> None:
    row = produce_row(
        {
            "minikafka": [ProduceRound(100.0, 8.0, 3.0), ProduceRound(120.0, 9.0, 3.0), ProduceRound(90.0, 7.0, 4.0)],
            "tansu": [ProduceRound(200.0, 3.0, 3.0), ProduceRound(240.0, 3.0, 3.0), ProduceRound(180.0, 2.0, 3.0)],
        }
    )
    assert (row["minikafka_mb_per_s"], row["tansu_mb_per_s"], row["ratio_to_tansu"]) == (100.0, 200.0, 0.5)
    assert row["cpu_ms_per_mb"] == {"minikafka": {"nodes": 8.0, "client": 3.0}, "tansu": {"nodes": 3.0, "client": 3.0}}
    assert row["ratio_cpu_allows"] == pytest.approx(6 / 11, abs=1e-3)


def test_the_table_shows_the_cpu_columns_for_produce_rows_only(capsys: pytest.CaptureFixture[str]) -> None:
    produce = produce_row({"minikafka": [ProduceRound(50.0, 9.0, 3.0)], "tansu": [ProduceRound(100.0, 3.0, 3.0)]})
    consume = {"minikafka_mb_per_s": 80.0, "tansu_mb_per_s": 80.0, "ratio_to_tansu": 1.0}
    print_rows({"confluent_p1": produce, "consume": {"records": 10, "kcat_p1": consume}})
    produce_lines, consume_lines = capsys.readouterr().out.split("Kafka wire consume")
    assert "CPU allows" in produce_lines and "0.50" in produce_lines and "9.0+3.0 / 3.0+3.0" in produce_lines
    assert "CPU" not in consume_lines and "kcat, p1 partition(s)" in consume_lines
