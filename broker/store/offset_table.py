"""Consumer-group committed offsets, kept in memory and snapshotted atomically.

Acks are far too frequent to fsync one by one; the snapshot is written by the
store's background flusher about once a second and on clean shutdown. After
kill -9 a group resumes from its last snapshot and sees at most that second
of acked messages again (at-least-once), never loses older progress.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from .atomic_file import read_json, write_json


class OffsetTable:
    REMEDY = ("restore it from a backup, or move it aside to have every consumer group "
              "start again from each queue's first message")

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._offsets: dict[str, dict[str, dict[int, int]]] = read_json(path, {}, _parse_offsets, self.REMEDY)
        self._dirty = False

    def get(self, group: str, topic: str, queue_id: int) -> int | None:
        return self._offsets.get(group, {}).get(topic, {}).get(queue_id)

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        with self._lock:
            queues = self._offsets.setdefault(group, {}).setdefault(topic, {})
            if offset > queues.get(queue_id, -1):
                queues[queue_id] = offset
                self._dirty = True

    def move(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Set the queue's committed offset to ``offset``, back or forth (an operator's offset reset; ``commit`` only
        moves forward)."""
        with self._lock:
            self._offsets.setdefault(group, {}).setdefault(topic, {})[queue_id] = offset
            self._dirty = True

    def drop_group(self, group: str) -> None:
        """Forget every committed offset of ``group`` (an operator deleted it)."""
        with self._lock:
            if self._offsets.pop(group, None) is not None:
                self._dirty = True

    def drop_topic(self, topic: str) -> None:
        """Forget every group's committed offsets on ``topic`` (an operator deleted it)."""
        with self._lock:
            for by_topic in self._offsets.values():
                if by_topic.pop(topic, None) is not None:
                    self._dirty = True

    def clamp(self, ends: Callable[[str, int], int]) -> list[tuple[str, str, int, int, int]]:
        """Lower every offset past its queue's end to that end; return (group, topic, queue, was, now) per change.

        After the commit log lost its tail, a committed offset beyond the new end
        would hide the messages that get the lost offsets again.
        """
        changed = []
        with self._lock:
            for group, topics in self._offsets.items():
                for topic, queues in topics.items():
                    for queue_id, offset in queues.items():
                        end = ends(topic, queue_id)
                        if offset > end:
                            queues[queue_id] = end
                            changed.append((group, topic, queue_id, offset, end))
            if changed:
                self._dirty = True
        return changed

    def reset(self, offsets: list[tuple[str, str, int, int]]) -> None:
        """Hold only ``offsets`` (group, topic, queue, offset) from now on: what was derived from a cut tail of the log goes."""
        with self._lock:
            self._offsets = {}
            for group, topic, queue_id, offset in offsets:
                self._offsets.setdefault(group, {}).setdefault(topic, {})[queue_id] = offset
            self._dirty = True

    def groups(self) -> list[str]:
        return sorted(self._offsets)

    def topics_of(self, group: str) -> dict[str, dict[int, int]]:
        return {t: dict(q) for t, q in self._offsets.get(group, {}).items()}

    def snapshot(self) -> dict | None:
        """A copy to persist, or None when nothing changed since the last one."""
        with self._lock:
            if not self._dirty:
                return None
            self._dirty = False
            return {g: {t: {str(q): o for q, o in qs.items()} for t, qs in ts.items()} for g, ts in self._offsets.items()}

    def write(self, snapshot: dict | None) -> None:
        """Persist a ``snapshot``; when that fails, the next snapshot is taken again."""
        if snapshot is None:
            return
        try:
            write_json(self.path, {"offsets": snapshot})
        except BaseException:
            self.unsaved()
            raise

    def unsaved(self) -> None:
        """The last snapshot did not reach the disk: the next one must not be skipped."""
        with self._lock:
            self._dirty = True

    def persist(self) -> None:
        self.write(self.snapshot())


def _parse_offsets(raw: dict) -> dict[str, dict[str, dict[int, int]]]:
    out = {
        group: {topic: {int(q): off for q, off in queues.items()} for topic, queues in topics.items()}
        for group, topics in raw["offsets"].items()
    }
    if any(not isinstance(off, int) for topics in out.values() for queues in topics.values() for off in queues.values()):
        raise ValueError("an offset is not an integer")
    return out
