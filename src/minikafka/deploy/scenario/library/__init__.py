"""The built-in scenarios, one module each (`minikafka scenario list`)."""
