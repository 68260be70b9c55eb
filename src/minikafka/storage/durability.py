"""fsync, and what a simulated disk needs to know: in a real process an fsync; in a simulated node its disk decides
(a crashed node's fsync fails, and what a power loss keeps is what was synced, tracked per file)."""

from __future__ import annotations

import os
from typing import Any

from minikafka.common.node_environment import simulated_node


def sync_fd(fd: int) -> None:
    node = simulated_node()
    if node is None:
        os.fsync(fd)
    else:
        node.disk.check_sync()  # the file's contents are in memory or tmpfs: only whether it may succeed matters


def opened(file: Any) -> None:
    """A segment or index file was opened: a simulated node's disk cuts it back to its synced size on power loss."""
    node = simulated_node()
    if node is not None:
        node.disk.opened(file)
