"""The single writer: a write group's records in the commit log and their consume-queue entries, under one lock.

``put`` is called from one thread (the broker's event loop) and does the commit-log write and the consume-queue
dispatch inside the store's write lock, so a checkpoint can snapshot a consistent (commit-log offset, queue sizes)
pair. A write group is framed as one group in the log (every record but the last carries ``FLAG_GROUP_MORE``) and
written with one write: recovery keeps it whole or drops it whole (DESIGN section 3).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .commit_log import CommitLog
from .key_index import KeyIndex
from .queue_appends import QueueAppends, QueueBatches
from .record import FLAG_BODY_BINARY, FLAG_GROUP_MORE, HEADER_SIZE, encode_parts, encode_properties, queue_code, stored_size
from .store_types import GroupTooLarge, Listener, PutItem, PutResult
from .write_gate import WriteGate


class Writer:
    def __init__(self, commit_log: CommitLog, appends: QueueAppends, keys: KeyIndex, gate: WriteGate,
                 write_lock: threading.Lock, listeners: list[Listener], clock: Callable[[], float]) -> None:
        self._log = commit_log
        self._appends = appends
        self._keys = keys
        self._gate = gate
        self._lock = write_lock
        self._listeners = listeners  # the store's: told (topic, queue id) after messages land there
        self._clock = clock

    def fits(self, items: list[PutItem]) -> bool:
        """Whether ``items`` fit one segment, the limit of an atomic write group.

        An upper bound first (UTF-8 takes at most 4 bytes a character), so the usual
        small message is not encoded twice; exact sizes only when it might not fit.
        """
        worst = sum(HEADER_SIZE + 4 * len(i.topic) + len(i.body) + 4 * sum(len(k) + len(v) + 2 for k, v in i.properties.items())
                    for i in items)
        if worst <= self._log.segment_bytes:
            return True
        size = sum(stored_size(i.topic, i.properties, i.body) for i in items)
        return size <= self._log.segment_bytes

    def put(self, items: list[PutItem]) -> tuple[list[PutResult], int]:
        """Append ``items`` as one atomic write group; return results and the group's end offset."""
        if not items:
            raise ValueError("empty write group")
        now = int(self._clock() * 1000)
        parts, total = _encoded_parts(items)
        if total > self._log.segment_bytes:
            raise GroupTooLarge(f"a write group of {total} bytes exceeds the segment size {self._log.segment_bytes}")
        results: list[PutResult] = []
        last = len(items) - 1
        with self._lock:
            self._gate.check()
            try:
                offset = self._log.next_offset_for(total)
            except OSError as exc:
                raise self._gate.refused("cannot start a commit-log segment", exc) from exc
            batches: QueueBatches = {}
            chunks: list[bytes] = []
            for i, it in enumerate(items):
                next_offset, entries = self._appends.batch(batches, (it.topic, it.queue_id))
                qoff = next_offset[0]
                next_offset[0] = qoff + 1
                t, p, size = parts[i]
                flags = (FLAG_BODY_BINARY if it.binary else 0) | (FLAG_GROUP_MORE if i < last else 0)
                chunks += encode_parts(t, it.queue_id, p, it.body, qoff, offset, it.born_timestamp or now, now, flags)
                results.append(PutResult(it.topic, it.queue_id, qoff, offset, size, it.properties, now))
                entries.append((offset, size, queue_code(it.topic, it.queue_id, it.properties, it.tag)))
                offset += size
            self._appends.append_then(batches, lambda: self._log.write(b"".join(chunks)))
            self._keys.add_results(results, now)
        self._gate.succeeded()
        for key in batches:
            for listener in self._listeners:
                listener(*key)
        return results, offset


def _encoded_parts(items: list[PutItem]) -> tuple[list[tuple[bytes, bytes, int]], int]:
    """Each item's encoded topic and properties with its record size, and the group's total size."""
    topic_bytes: dict[str, bytes] = {}
    parts = []
    total = 0
    for it in items:
        t = topic_bytes.get(it.topic)
        if t is None:
            t = topic_bytes[it.topic] = it.topic.encode()
        p = encode_properties(it.properties)
        size = HEADER_SIZE + len(t) + len(p) + len(it.body)
        parts.append((t, p, size))
        total += size
    return parts, total
