"""The runtime the group and transaction coordinators share, as Kafka's CoordinatorRuntime serves both: one shard
per partition of the coordinator's internal topic that this broker leads, loaded from the log when it becomes the
leader and dropped when it stops leading; each coordinator brings its own records and state."""
