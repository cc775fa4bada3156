"""What operators see of consumer groups: the groups, each one's lag per queue, and its deliveries being retried.

Read from the delivery state (``GroupProgress``) and the committed offsets, on the event loop's thread, for the
group pages (HTTP, the console, ``halfmq admin groups``) and /metrics. A view of one group reads only that group's
progress (``GroupStates.by_group``): a page of all groups stays linear in their number.
"""

from __future__ import annotations

from collections.abc import Callable

from halfmq.broker.store.message_store import MessageStore
from halfmq.errors import ConsumerGroupNotFound

from .group_progress import GroupProgress
from .queue_progress import QueueLag


class GroupViews:
    def __init__(self, store: MessageStore, progress: GroupProgress, clock: Callable[[], float]) -> None:
        self._store = store
        self._progress = progress
        self._clock = clock

    def group_lag(self, group: str) -> dict[str, list[QueueLag]]:
        """Per topic the group consumed or committed: each queue's committed offset, end, lag and deliveries in flight."""
        topics = set(self._store.offsets.topics_of(group)) | set(self._progress.states.by_group.get(group, ()))
        if not topics:
            raise ConsumerGroupNotFound(f"consumer group {group!r} has not consumed anything")
        return {topic: [p.lag(qid, self._store.reads.queue_range(topic, qid)[1], self._clock())
                        for qid, p in enumerate(self._progress.open(group, topic).queues)]
                for topic in sorted(topics) if self._store.topic(topic) is not None}

    def groups(self) -> list[str]:
        """Every group that has consumed or committed anything (operators' listings)."""
        return sorted(set(self._store.offsets.groups()) | set(self._progress.states.by_group))

    def retrying(self, group: str) -> int:
        """The group's in-flight deliveries past their first attempt (nacked or timed out before)."""
        return sum(1 for state in self._progress.states.by_group.get(group, {}).values()
                   for progress in state.queues for item in progress.in_flight.values() if item.deliveries > 1)
