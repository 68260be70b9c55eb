# `minikafka --help`'s line for the command, here so that listing it does not import the simulator.
SIMULATE_HELP = "the shipped nodes in one process on simulated time, network and disks: seeded fault schedules"
