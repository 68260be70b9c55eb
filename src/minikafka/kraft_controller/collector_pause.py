"""Python's cyclic garbage collector paused while the active controller holds thousands of proposed, uncommitted
records: each keeps the image after it until its commit, and every full collection meanwhile walked all of them, in
one loop turn (the longest turns left of a fencing at 20,000 partitions, 150-350 ms). Those images are freed by
reference counting on commit, so the one collection after the pause walks what is left.

The collector is the interpreter's, shared by every node of a process (the simulator's): a pause only ever turns
off a collector it found on, and turns it back on itself.
"""

from __future__ import annotations

import gc

# Proposed records pending from which the collector is paused: a fencing, a controlled shutdown or a CreateTopics
# of thousands of partitions, or the AlterPartitions of a rejoin piling up; never a small cluster's writes.
PAUSE_FROM_PROPOSED_RECORDS = 2000


class CollectorPause:
    def __init__(self) -> None:
        self.paused = False

    def hold_while(self, pending_records: int) -> None:
        """Pause the collector while `pending_records` proposed records await their commit, resume it below the
        bound."""
        if pending_records >= PAUSE_FROM_PROPOSED_RECORDS:
            if not self.paused and gc.isenabled():
                gc.disable()
                self.paused = True
        else:
            self.release()

    def release(self) -> None:
        if self.paused:
            self.paused = False
            gc.enable()
