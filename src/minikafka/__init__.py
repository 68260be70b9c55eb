"""The `minikafka` entry point: it only gathers the commands each package defines."""
