"""Every consume queue of the store, by (topic, queue id): opened on first use, under ``consumequeue/{topic}/{queue id}``.

One table shared by the store's parts: the writers append to it (writer.py, replica_append.py), the reads read it
without a lock (queue_reads.py: a queue only grows for a reader), recovery trims and refills it, the checkpoint
records how long each queue is.
"""

from __future__ import annotations

from pathlib import Path

from .consume_queue import ConsumeQueue
from .file_handles import FileHandles

QueueKey = tuple[str, int]  # (topic, queue id)


class ConsumeQueues:
    def __init__(self, root: Path, entries_per_file: int, handles: FileHandles | None = None) -> None:
        self.root = root
        self._entries_per_file = entries_per_file
        self._handles = handles or FileHandles()  # every queue's reads share the store's bounded table
        self._queues: dict[QueueKey, ConsumeQueue] = {}
        self.log_start = 0  # every queue opened starts at its first entry at or past it (retention.py)
        self._floors: dict[QueueKey, int] = {}  # a deleted topic's queue ends: a topic made again reads from there

    def find(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The queue if it is open (a queue never written has none): reads open nothing."""
        return self._queues.get((topic, queue_id))

    def open(self, topic: str, queue_id: int) -> ConsumeQueue:
        """The queue, opened (and its directory made) on first use; OSError when the disk refuses."""
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            cq = ConsumeQueue(self.root / topic / str(queue_id), topic, queue_id, self._entries_per_file, self._handles,
                              retained=self.log_start > 0)
            if self.log_start:
                cq.forget_below(self.log_start)
            self._queues[(topic, queue_id)] = cq
        return cq

    def forget_below(self, log_start: int) -> list[Path]:
        """Every queue starts at its first entry at or past ``log_start`` (its files wholly below it deleted); return
        the paths deleted (their descriptors forgotten by the store's handles)."""
        self.log_start = max(self.log_start, log_start)
        deleted: list[Path] = []
        for cq in list(self._queues.values()):
            deleted += cq.forget_below(self.log_start)
        return deleted

    def range(self, topic: str, queue_id: int) -> tuple[int, int]:
        """(min offset, one past the last entry); (0, 0) for a queue never written. The min is at least the queue's
        floor (a deleted topic's end)."""
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            return (0, 0)
        return max(cq.min_offset, self._floors.get((topic, queue_id), 0)), cq.max_offset

    def floor(self, topic: str, queue_id: int) -> int:
        """The first offset a reader may see of the queue: where a deleted topic of the same name ended (0 else)."""
        return self._floors.get((topic, queue_id), 0)

    def floors_of(self, topic: str) -> dict[int, int]:
        """Each queue's floor of ``topic`` (a deleted topic's ends), for the state snapshot."""
        return {qid: end for (name, qid), end in self._floors.items() if name == topic}

    def raise_floor(self, topic: str, queue_id: int, offset: int) -> None:
        """Hide the queue's entries before ``offset`` from every reader (the topic that wrote them was deleted); the
        files stay for retention. Kept in memory: the ``topic-deleted`` record sets it again at each start."""
        key = (topic, queue_id)
        self._floors[key] = max(self._floors.get(key, 0), offset)

    def all(self) -> list[ConsumeQueue]:
        return list(self._queues.values())

    def sizes(self) -> dict[str, int]:
        """Each open queue's length, as the checkpoint records it (``"{topic}/{queue id}"``)."""
        return {f"{t}/{q}": cq.max_offset for (t, q), cq in self._queues.items()}

    def on_disk(self) -> set[QueueKey]:
        """The queues that have a directory, open or not (recovery: what topics.json may have lost)."""
        found: set[QueueKey] = set()
        if self.root.exists():
            for topic_dir in self.root.iterdir():
                for qdir in topic_dir.iterdir():
                    if qdir.name.isdigit():
                        found.add((topic_dir.name, int(qdir.name)))
        return found

    def trim_beyond(self, commit_log_end: int) -> None:
        """Cut every queue's entries that point at or past ``commit_log_end`` (a cut of the log's tail)."""
        for cq in self._queues.values():
            cq.trim_beyond(commit_log_end)

    def close(self) -> None:
        for cq in self._queues.values():
            cq.close()
