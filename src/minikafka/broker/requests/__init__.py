"""The broker's one request layer, as Kafka's KafkaApis is the one place a request is handled whatever the listener:
Produce, Fetch, ListOffsets and OffsetForLeaderEpoch in terms of plain request and answer dataclasses. The gRPC
servicer and the Kafka listener only decode into them, call the handler, and encode what it answers.

The dataclasses are values but not frozen: many are built per partition on the Produce and Fetch paths, and a frozen
one costs about three times as much to build."""
