"""The Kafka wire protocol listener: unmodified Kafka clients produce to and consume from the brokers."""
