"""What a partition leader knows of one follower (Kafka's Replica / ReplicaState), as an immutable value.

Everything here comes from the follower's Fetch requests: its LEO (the fetch offset), when it last fetched, when
it was last caught up (Kafka's lastCaughtUpTime rule), the broker epoch its Fetch carried
(`replica_state.replica_epoch`, KIP-903) and the leader epoch it fetched in.
"""

from __future__ import annotations

from dataclasses import dataclass

from minikafka.common.evolve import evolve

UNKNOWN = -1


@dataclass(frozen=True)
class ReplicaState:
    replica_id: int
    log_end_offset: int = UNKNOWN
    last_fetch_ms: int = UNKNOWN
    last_caught_up_ms: int = UNKNOWN
    broker_epoch: int = UNKNOWN  # replica_state.replica_epoch of the latest counted Fetch
    fetch_leader_epoch: int = UNKNOWN  # the leader epoch it last fetched in
    # Our LEO when it fetched last time: reaching it now means it was caught up at that previous fetch.
    last_fetch_leader_log_end_offset: int = UNKNOWN

    def on_fetch(
        self, fetch_offset: int, leader_log_end_offset: int, broker_epoch: int, leader_epoch: int, now_ms: int
    ) -> ReplicaState:
        """A counted Fetch at `fetch_offset` while our LEO is `leader_log_end_offset`."""
        if fetch_offset >= leader_log_end_offset:
            caught_up = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset >= 0 and self.last_fetch_ms >= 0:
            # It has everything we had at its previous fetch, so it was caught up as of then.
            caught_up = max(self.last_caught_up_ms, self.last_fetch_ms)
        else:
            caught_up = self.last_caught_up_ms
        return evolve(
            self,
            log_end_offset=fetch_offset,
            last_fetch_ms=now_ms,
            last_caught_up_ms=caught_up,
            broker_epoch=broker_epoch,
            fetch_leader_epoch=leader_epoch,
            last_fetch_leader_log_end_offset=leader_log_end_offset,
        )

    def on_idle_fetch(self, leader_log_end_offset: int, fetch_ms: int) -> ReplicaState:
        """A Fetch at `fetch_ms` that did not read this partition: its fetch session vouches that the follower was
        still at our log end `leader_log_end_offset` then (its fetch state and our log unchanged since its last
        counted Fetch), as counting that Fetch would have recorded. An older time, or a follower not at our log
        end, teaches nothing."""
        if fetch_ms <= self.last_fetch_ms or self.log_end_offset != leader_log_end_offset:
            return self
        return evolve(
            self,
            last_fetch_ms=fetch_ms,
            last_caught_up_ms=max(self.last_caught_up_ms, fetch_ms),
            last_fetch_leader_log_end_offset=leader_log_end_offset,
        )

    @classmethod
    def for_new_leader(cls, replica_id: int, in_sync: bool, now_ms: int) -> ReplicaState:
        """Follower -> leader: all follower state starts over; ISR members get one lag period of grace."""
        return cls(replica_id, last_caught_up_ms=now_ms if in_sync else UNKNOWN)

    def for_new_leader_epoch(self, in_sync: bool, leader_epoch_start_offset: int, now_ms: int) -> ReplicaState:
        """Leader again in a new epoch: out-of-sync followers must fetch in this epoch before they may rejoin."""
        return evolve(
            self,
            last_fetch_ms=now_ms if in_sync else UNKNOWN,
            last_caught_up_ms=now_ms if in_sync else UNKNOWN,
            last_fetch_leader_log_end_offset=leader_epoch_start_offset,
            fetch_leader_epoch=self.fetch_leader_epoch if in_sync else UNKNOWN,
        )

    def lag_ms(self, now_ms: int) -> int:
        return now_ms - self.last_caught_up_ms

    def is_caught_up(self, leader_log_end_offset: int, now_ms: int, replica_lag_time_max_ms: int) -> bool:
        """Kafka's isCaughtUp: at the leader's log end (an idle follower stays in sync), or caught up recently."""
        if self.log_end_offset == leader_log_end_offset:
            return True
        return self.last_caught_up_ms >= 0 and self.lag_ms(now_ms) <= replica_lag_time_max_ms
