"""KIP-848's consumer group protocol (ConsumerGroupHeartbeat): the pure core, not yet wired into the broker."""
