"""kafka-topics.sh for the clients' test suites: `--create`, `--alter --partitions` and `--delete` of one topic,
done with confluent-kafka's AdminClient through the brokers' Kafka listeners, as Kafka's tool does them.

    kafka_topics_shim.py --bootstrap-server HOST:PORT --create --topic T --partitions 1 --replication-factor 1 \
        [--config k=v ...]

librdkafka's tests call `$KAFKA_PATH/bin/kafka-topics.sh` (`test_kafka_topics`) where a test needs a topic config
its own admin calls do not set; `librdkafka_suite.py` writes that script to call this one. Exits 1 with Kafka's
error name when the broker refuses."""

from __future__ import annotations

import argparse
import sys

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

TIMEOUT_S = 30


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bootstrap-server", required=True)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--create", action="store_true")
    action.add_argument("--alter", action="store_true")
    action.add_argument("--delete", action="store_true")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=-1)
    parser.add_argument("--replication-factor", type=int, default=-1)
    parser.add_argument("--config", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    admin = AdminClient({"bootstrap.servers": args.bootstrap_server})
    if args.create:
        configs = dict(item.split("=", 1) for item in args.config)
        topic = NewTopic(args.topic, args.partitions, args.replication_factor, config=configs)
        futures = admin.create_topics([topic], operation_timeout=TIMEOUT_S)
    elif args.alter:
        futures = admin.create_partitions([NewPartitions(args.topic, args.partitions)], operation_timeout=TIMEOUT_S)
    else:
        futures = admin.delete_topics([args.topic], operation_timeout=TIMEOUT_S)
    try:
        futures[args.topic].result(TIMEOUT_S)
    except KafkaException as error:
        print(f"Error while executing topic command : {error.args[0].str()}", file=sys.stderr)
        return 1
    print(f"{'Created' if args.create else 'Altered' if args.alter else 'Deleted'} topic {args.topic}.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
