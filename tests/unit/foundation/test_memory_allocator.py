"""A process whose allocator keeps freed memory (common.memory_allocator) takes no new pages for buffers that
follow freed ones; with glibc's defaults the same buffers fault every page in again."""

from __future__ import annotations

import subprocess
import sys

import pytest

# Frees 80 MiB of 4 MiB buffers, then counts the page faults of allocating them again.
REUSE = """
import resource, sys
from minikafka.common.memory_allocator import keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory()
faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt
buffers = [bytearray(4 << 20) for _ in range(20)]
del buffers
before = faults()
buffers = [bytearray(4 << 20) for _ in range(20)]
print(faults() - before)
"""


def faults_reallocating(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", REUSE, mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_freed_buffers_are_reused_without_faulting_their_pages_in_again() -> None:
    pages = 80 * 1024 * 1024 // 4096
    assert faults_reallocating("default") > pages // 2
    assert faults_reallocating("keep") < pages // 20
