"""The virtual-time loop the simulation tests run on (it ships in minikafka.sim, for `minikafka simulate`)."""

from minikafka.sim.virtual_loop import WALL_START_S, Deadlock, VirtualTimeLoop, run_virtual

__all__ = ["WALL_START_S", "Deadlock", "VirtualTimeLoop", "run_virtual"]
