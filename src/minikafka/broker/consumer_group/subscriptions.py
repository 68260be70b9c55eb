"""What a consumer group subscribes to and the target assignment that follows from it: each member's topics are
its topic names plus the topics its regular expression matched when the group last resolved it; the group epoch
moves when a member's topic names or the subscribed topics' partition counts change; the target
assignment comes from the assignor most members ask for (else the first of `group.consumer.assignors`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from minikafka.broker.consumer_group.assignor import ASSIGNORS, NO_RACKS, Racks
from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerGroupConfig, ConsumerMember, TopicPartition

NO_TOPICS: frozenset[str] = frozenset()


def member_topics(member: ConsumerMember, resolved: Mapping[str, frozenset[str]]) -> frozenset[str]:
    regex = member.subscribed_topic_regex
    return member.subscribed_topics | resolved.get(regex, NO_TOPICS) if regex else member.subscribed_topics


def subscriber_counts(group: ConsumerGroup) -> Counter[str]:
    """Each regular expression some member subscribes with -> how many do."""
    return Counter(m.subscribed_topic_regex for m in group.members.values() if m.subscribed_topic_regex)


def subscription_metadata(
    group: ConsumerGroup, topics: Mapping[str, int], resolved: Mapping[str, frozenset[str]]
) -> dict[str, int]:
    """The partition count of every topic some member subscribes to and the metadata knows."""
    subscribed = frozenset().union(*(member_topics(m, resolved) for m in group.members.values()))
    return {topic: topics[topic] for topic in sorted(subscribed) if topic in topics}


def refreshed(group: ConsumerGroup, topics: Mapping[str, int], bump: bool) -> ConsumerGroup:
    """The group with the subscribed partition counts as `topics` has them, and without the resolved regexes no
    member subscribes with any more; its epoch bumped when the counts changed (or `bump`). Regexes are resolved
    apart (regex_resolution.py), as Kafka resolves them."""
    subscribed = subscriber_counts(group)
    resolved = {regex: matched for regex, matched in group.resolved_regexes.items() if regex in subscribed}
    metadata = subscription_metadata(group, topics, resolved)
    if bump or metadata != group.subscription_metadata:
        epoch = group.group_epoch + 1
        return group.evolve(group_epoch=epoch, subscription_metadata=metadata, resolved_regexes=resolved)
    return group.evolve(resolved_regexes=resolved) if resolved != group.resolved_regexes else group


def preferred_assignor(group: ConsumerGroup, config: ConsumerGroupConfig) -> str:
    """The server assignor most members ask for (ties to the first by name); else the configured default."""
    asked = Counter(
        name for m in group.members.values() if (name := m.server_assignor) is not None and name in config.assignors
    )
    if not asked:
        return config.assignors[0]
    return min(asked, key=lambda name: (-asked[name], name))


def update_target_assignment(
    group: ConsumerGroup, config: ConsumerGroupConfig, partition_racks: Mapping[TopicPartition, frozenset[str]]
) -> ConsumerGroup:
    """The target assignment of the current group epoch; `partition_racks`: the racks of each partition's
    replicas, as the metadata knows them."""
    subscriptions = {m.member_id: member_topics(m, group.resolved_regexes) for m in group.members.values()}
    assign = ASSIGNORS[preferred_assignor(group, config)]
    member_racks = {m.member_id: m.rack_id for m in group.members.values() if m.rack_id}
    racks = Racks(member_racks, partition_racks) if member_racks else NO_RACKS
    target = assign(subscriptions, group.subscription_metadata, group.target, racks)
    return group.evolve(target=target, assignment_epoch=group.group_epoch)
