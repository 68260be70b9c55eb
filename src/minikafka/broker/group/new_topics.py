"""Where the metadata stands for the consumer groups' regexes: its offset, and the last offset at which a topic
was created, noted from each new image as Kafka's coordinator notes it (lastMetadataImageWithNewTopics). A group
resolves its regexes again once a topic was created after its last resolution."""

from __future__ import annotations

from minikafka.broker.consumer_group.regex_resolution import TopicsVersion
from minikafka.kraft_controller.metadata.image import MetadataImage


class NewTopics:
    def __init__(self) -> None:
        self._seen = TopicsVersion()
        self._names: frozenset[str] = frozenset()

    def version(self, image: MetadataImage) -> TopicsVersion:
        if image.offset == self._seen.offset:
            return self._seen
        names = frozenset(image.topics_by_name.keys())
        created = self._seen.new_topics_offset if names <= self._names else image.offset
        self._seen, self._names = TopicsVersion(image.offset, created), names
        return self._seen
