"""When a consumer group's regular expressions are resolved, as Kafka's coordinator does it: never inside a
heartbeat, but in a resolution of every regex of the group at once that a heartbeat starts and whose result is a
write of its own (GroupMetadataManager.maybeUpdateRegularExpressions and handleRegularExpressionsResult). So a
member subscribing with a new regex gets the topics it names at once and the regex's topics one heartbeat later,
and a new topic joins at most every REGEX_BATCH_REFRESH_INTERVAL_MS. Pure: the shell runs the resolution."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from minikafka.broker.consumer_group.model import ConsumerGroup, ConsumerMember
from minikafka.broker.consumer_group.subscriptions import subscriber_counts, subscription_metadata
from minikafka.broker.consumer_group.topic_regex import matching

# Kafka's GroupMetadataManager.REGEX_BATCH_REFRESH_INTERVAL_MS: a group's regexes are resolved again at most this
# often, however many members heartbeat.
REGEX_BATCH_REFRESH_INTERVAL_MS = 10_000


@dataclass(frozen=True)
class TopicsVersion:
    """Where the metadata the coordinator sees stands: its offset, and the last offset at which a topic was
    created (Kafka's lastMetadataImageWithNewTopics); -1 when unknown."""

    offset: int = -1
    new_topics_offset: int = -1


UNVERSIONED = TopicsVersion()


@dataclass(frozen=True)
class RegexChange:
    group: ConsumerGroup  # a regex no member subscribes with any more is dropped; a resolution may be pending
    bump: bool  # the member took up a regex the group has resolved already: a new target assignment


def regex_change(
    group: ConsumerGroup, member: ConsumerMember, updated: ConsumerMember, version: TopicsVersion, now: int
) -> RegexChange:
    """A heartbeat's `member` becoming `updated` in `group` (which holds `member`, unless it is joining): Kafka's
    maybeUpdateRegularExpressions."""
    old, new = member.subscribed_topic_regex, updated.subscribed_topic_regex
    before, after = subscriber_counts(group), subscriber_counts(group.with_member(updated))
    resolved = dict(group.resolved_regexes)
    bump = required = False
    if old != new:
        if old and before[old] == 1:
            resolved.pop(old, None)  # its last subscriber moved on: the group forgets it
        if new:
            required = before[new] == 0
            bump = not required and new in group.resolved_regexes
    group = group.evolve(resolved_regexes=resolved)
    if (required or before) and _resolution_due(group, set(after), version, now, required):
        group = group.evolve(regex_resolution_pending=True)
    return RegexChange(group, bump)


def _resolution_due(
    group: ConsumerGroup, subscribed: set[str], version: TopicsVersion, now: int, required: bool
) -> bool:
    """Kafka's conditions: none under way, the last one at least the batch interval ago, and a regex left
    unresolved or a topic created since."""
    if group.regex_resolution_pending or not subscribed:
        return False
    # Kafka takes the last resolution's time from the resolved regexes themselves: none resolved, no wait.
    last = group.regexes_resolved_ms if group.resolved_regexes else None
    if last is not None and now <= last + REGEX_BATCH_REFRESH_INTERVAL_MS:
        return False
    required |= subscribed != set(group.resolved_regexes)
    return required or group.regexes_version < version.new_topics_offset


def resolve_regexes(
    group: ConsumerGroup,
    topics: Mapping[str, int],
    version: TopicsVersion,
    now: int,
    describable: Callable[[str], bool] | None = None,
) -> ConsumerGroup:
    """The resolution's result applied (Kafka's handleRegularExpressionsResult): every regex a member subscribes
    with, matched against `topics`, of those `describable` allows (the member that started the resolution may
    DESCRIBE them, as Kafka 4 filters them); the group epoch bumped when a regex's topics or the subscribed
    partition counts changed."""
    regexes = sorted(subscriber_counts(group))
    visible = [topic for topic in topics if describable(topic)] if describable is not None else list(topics)
    resolved = {regex: matching(regex, visible) for regex in regexes}
    changed = any(group.resolved_regexes.get(regex) != topics_of for regex, topics_of in resolved.items())
    metadata = subscription_metadata(group, topics, resolved)
    after = group.evolve(
        resolved_regexes=resolved,
        subscription_metadata=metadata,
        regexes_resolved_ms=now,
        regexes_version=version.offset,
        regex_resolution_pending=False,
    )
    if changed or metadata != group.subscription_metadata:
        return after.evolve(group_epoch=group.group_epoch + 1)
    return after
