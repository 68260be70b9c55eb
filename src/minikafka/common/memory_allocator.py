"""glibc's allocator, told to keep the memory a process frees for the buffers that follow (as the garbage collector
is set in garbage_collection.py: the defaults do not suit a long-running server).

A broker allocates and frees buffers of a megabyte or so for every request, every append and every Fetch answer.
By default glibc gives such memory back to the kernel soon after it is freed (blocks above a dynamic threshold are
mapped and unmapped one by one; a heap whose free top passes twice that threshold is trimmed), so the next buffer
faults its pages in again and the kernel zeroes each one. In a virtual machine whose memory the host backs lazily, a
fault can cost far more. Keeping freed memory removed about 6% of the brokers' CPU per MB acknowledged through the
Kafka listener, paired runs on these machines (docs/benchmarks.md); a broker's resident size after 400 MB grew
from 140-160 MB to 157-162 MB.
"""

from __future__ import annotations

import ctypes
import sys

# mallopt parameters, from glibc's malloc.h.
M_TRIM_THRESHOLD = -1
M_TOP_PAD = -2
M_MMAP_THRESHOLD = -3

MIB = 1024 * 1024
SETTINGS = (
    (M_MMAP_THRESHOLD, 64 * MIB),  # blocks below this come from the heap, where freed ones are reused
    (M_TRIM_THRESHOLD, 256 * MIB),  # free memory at the heap's top kept before any goes back to the kernel
    (M_TOP_PAD, 64 * MIB),  # extra asked for whenever the heap grows, so it grows seldom
)


def keep_freed_memory() -> bool:
    """Set glibc's thresholds (SETTINGS); False, changing nothing, where the C library is not glibc."""
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None)
    if not hasattr(libc, "gnu_get_libc_version"):  # musl has a mallopt that does nothing
        return False
    return all(libc.mallopt(parameter, value) == 1 for parameter, value in SETTINGS)
