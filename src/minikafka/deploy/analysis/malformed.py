"""Lines of a run's JSON files that cannot be analysed: torn by a writer killed mid-line, garbage, or missing what
a row needs (a timestamp that does not parse, a record without its offset). They are skipped and counted per file,
and the report names the first few by line number, so one bad line never stops or skews the analysis."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructType

LINES_NAMED = 5
MAX_STRING_CHARS = 256 * 1024 * 1024
"""The longest JSON string read (Spark's `maxStringLen`; Jackson's default, 20,000,000, is less than a history line
of a 64 MiB record holds): a longer one is named as the reason its line is skipped."""
DIGEST_ABOVE_CHARS = 1024
"""A digested field longer than this is replaced by `sha256:<hex>` as it is read: the checks compare values only
for equality, and grouping many-megabyte values runs the analysis out of memory; short ones stay readable."""


@dataclass(frozen=True)
class Loaded:
    """A JSON source split in two: the well-formed rows, and one row (`file`) per malformed line."""

    rows: DataFrame
    malformed: DataFrame


@dataclass(frozen=True)
class Shape:
    """What a well-formed line of one kind of file holds: these fields non-null, these as ISO timestamps."""

    required: tuple[str, ...]
    timestamps: tuple[str, ...] = ()
    digested: tuple[str, ...] = ()  # strings compared only for equality: a long one is kept as its digest


def read_json(spark: SparkSession, files: Sequence[Path], schema: StructType, shape: Shape) -> Loaded:
    """Read JSON lines with `schema` (plus `file`, the path). A line is well formed when its required fields are
    there and its timestamps parse (then they are timestamps); a torn or garbage line parses to nulls, so it is not.
    A field of another type than the schema's is null on that line only, as for any missing field."""
    if not files:
        raw = spark.createDataFrame([], schema).withColumn("file", F.lit(None).cast(StringType()))
    else:
        reader = spark.read.schema(schema).option("maxStringLen", MAX_STRING_CHARS)
        raw = reader.json([str(f) for f in files]).withColumn("file", F.input_file_name())
    for name in shape.timestamps:
        raw = raw.withColumn(name, F.try_to_timestamp(F.col(name)))
    for name in shape.digested:
        long = F.length(name) > DIGEST_ABOVE_CHARS
        raw = raw.withColumn(name, F.when(long, F.concat(F.lit("sha256:"), F.sha2(name, 256))).otherwise(F.col(name)))
    ok: Column = F.lit(True)
    for name in (*shape.required, *shape.timestamps):
        ok = ok & F.col(name).isNotNull()
    raw = raw.withColumn("well_formed", ok).cache()
    return Loaded(raw.where(F.col("well_formed")).drop("well_formed"), raw.where(~F.col("well_formed")).select("file"))


def _parses_as_time(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def line_problem(text: str, shape: Shape) -> str | None:
    """Why one line is malformed (None when it looks well formed); names the lines Spark counted."""
    if not text.strip():
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return "not JSON (a torn or garbage line)"
    if not isinstance(document, dict):
        return "not a JSON object"
    long = [(name, len(value)) for name, value in document.items() if isinstance(value, str)]
    long = [(name, length) for name, length in long if length > MAX_STRING_CHARS]
    if long:
        name, length = long[0]
        return f"'{name}' is a string of {length} characters, above the {MAX_STRING_CHARS} the analysis reads"
    missing = [name for name in shape.required if document.get(name) is None]
    if missing:
        return f"missing {', '.join(missing)}"
    bad = [name for name in shape.timestamps if not _parses_as_time(document.get(name))]
    return f"{', '.join(bad)} is not a timestamp" if bad else None


def locate(path: Path, shape: Shape, limit: int = LINES_NAMED) -> list[dict[str, Any]]:
    """The first `limit` malformed lines of one file: line number (from 1) and why."""
    found: list[dict[str, Any]] = []
    with path.open(encoding="utf-8", errors="replace") as lines:
        for number, text in enumerate(lines, start=1):
            problem = line_problem(text, shape)
            if problem is not None:
                found.append({"line": number, "problem": problem})
                if len(found) >= limit:
                    break
    return found


def malformed_report(run_dir: Path, sources: Sequence[tuple[Loaded, Shape]]) -> dict[str, Any]:
    """{"lines": total skipped, "files": [{"file", "lines", "first": [{"line", "problem"}]}]}: one Spark job
    counts them per file; only the files with any are read again to name their lines."""
    frames = [loaded.malformed.withColumn("kind", F.lit(index)) for index, (loaded, _) in enumerate(sources)]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    counts = union.groupBy("kind", "file").count().orderBy("file").collect()
    files = []
    for row in counts:
        path = Path(unquote(urlparse(row["file"]).path))
        shape = sources[row["kind"]][1]
        name = str(path.relative_to(run_dir)) if path.is_relative_to(run_dir) else str(path)
        files.append({"file": name, "lines": row["count"], "first": locate(path, shape)})
    return {"lines": sum(f["lines"] for f in files), "files": files}
