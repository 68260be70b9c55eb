"""`minikafka scenario`: the seed scenarios replayed with real processes, a guard switched on or off, ending in a
verdict with the decisive events quoted.

A scenario is a plain Python module (see library/): NAME, TITLE, GUARD, TOPOLOGY and `run(s: Steps)`, one line per
step, each step carrying the sentence that says what the protocol should do.
"""

from minikafka.deploy.scenario.model import FAST_FAILOVER, Expect, Guard, Topology
from minikafka.deploy.scenario.steps import StepFailed, Steps

__all__ = ["FAST_FAILOVER", "Expect", "Guard", "StepFailed", "Steps", "Topology"]
