"""How long a batch of metadata writes lingers before the active controller appends it (group commit).

Kafka's `controller.quorum.append.linger.ms` lets writes accumulate for a fixed time so that they share one append
and one fsync. Here a batch whose first write finds no earlier append awaiting its commit is appended at once:
there is no replication round under way to batch behind, so waiting would only add latency. A batch that starts
while an earlier append is replicating lingers the full time, as in Kafka, so a busy quorum batches as before.
"""

from __future__ import annotations


def batch_linger(linger: float, earlier_append_uncommitted: bool) -> float:
    """The linger of a batch starting now: `linger` behind an uncommitted append, none when the quorum is idle."""
    return linger if earlier_append_uncommitted else 0.0
