"""A source file's syntax tree, for the tests that scan the project's code."""

from __future__ import annotations

import ast
from pathlib import Path

ATTEMPTS = 3


def parse_file(path: Path) -> ast.Module:
    """`ast.parse` of `path`. CPython 3.11 can raise a spurious "AST constructor recursion depth mismatch"
    SystemError while other threads run (a test worker has threads left by earlier tests; later releases fixed it):
    parse again, the file is unchanged."""
    source = path.read_text()
    for attempt in range(ATTEMPTS):
        try:
            return ast.parse(source, str(path))
        except SystemError:
            if attempt == ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")
