"""A follower's writer: the leader's log bytes appended unchanged, and a divergent tail cut back.

A follower of a broker set (cluster/follower.py) never encodes a record: it appends the bytes its leader sent where
the leader wrote them, so both logs are the same bytes at the same offsets, and derives its consume queues and key
index from them as it goes. It shares the store's write lock, write gate and listeners with the writer (writer.py):
a node writes through one of them at a time, as it follows or leads.
"""

from __future__ import annotations

import threading
from functools import partial

from .commit_log import CommitLog
from .consume_queues import ConsumeQueues
from .flush_service import GroupCommitService
from .key_index import KeyIndex
from .queue_appends import QueueAppends, QueueBatches
from .replicated_groups import ReplicatedRecord, whole_groups
from .state_records import TXN_OP, StateRecord, topic_deleted_of, topic_of
from .store_types import Listener, ReplicationMismatch, store_log
from .topic_writes import TopicWrites
from .topics import TopicTable
from .write_gate import WriteGate

TOPIC_KIND = StateRecord.TOPIC.value
TOPIC_DELETED_KIND = StateRecord.TOPIC_DELETED.value
Keyed = list[tuple[list[tuple[str, str]], int, int, int]]  # (keys, log offset, size, store ms) for the key index


class ReplicaAppender:
    def __init__(self, commit_log: CommitLog, queues: ConsumeQueues, appends: QueueAppends, topics: TopicTable,
                 topic_writes: TopicWrites, keys: KeyIndex, group_commit: GroupCommitService, gate: WriteGate,
                 write_lock: threading.Lock, listeners: list[Listener]) -> None:
        self._log = commit_log
        self._queues = queues
        self._appends = appends
        self._topics = topics
        self._topic_writes = topic_writes
        self._keys = keys
        self._group_commit = group_commit
        self._gate = gate
        self._lock = write_lock
        self._listeners = listeners

    def append(self, blob: bytes | memoryview, start: int) -> int:
        """Append a leader's log bytes at ``start`` unchanged; return the new log end.

        Only whole write groups are taken; a trailing partial one is left for the
        next fetch. Each group lands where the leader wrote it: the same size rule
        rolls segments at the same places, and a record must name its own offset.
        The groups that share a segment are one run: one write of the log, and one
        append of consume-queue entries per queue. A mismatch anywhere in the bytes
        is ReplicationMismatch and nothing is written.
        """
        view = memoryview(blob)
        found = whole_groups(view, start)  # every check before anything is written
        ends = found.group_ends
        records = found.records
        touched: set[tuple[str, int]] = set()
        pos = g = r = 0
        keyed: Keyed = []  # followers answer journeys too
        with self._lock:
            self._gate.check()
            if start != self._log.end_offset:
                raise ReplicationMismatch(f"replicated bytes start at {start}, the log ends at {self._log.end_offset}")
            while g < len(ends):
                try:
                    self._log.next_offset_for(ends[g] - pos)  # the run's first group: a new segment where the leader began one
                except OSError as exc:
                    raise self._gate.refused("cannot start a commit-log segment", exc) from exc
                room = self._log.segment_bytes - (self._log.end_offset - self._log.last_base)
                while g < len(ends) and ends[g] - pos <= room:
                    g += 1
                run_end = ends[g - 1]
                batches: QueueBatches = {}
                while r < len(records) and records[r].at < run_end:
                    self._entry(records[r], start, batches, keyed)
                    r += 1
                self._appends.append_then(batches, partial(self._log.write, view[pos:run_end]))
                touched.update(batches)
                pos = run_end
                self._keys.add_records(keyed)
                keyed.clear()
        if pos:
            self._gate.succeeded()
        for listener in self._listeners:
            for key in touched:
                listener(*key)
        return self._log.end_offset

    def _entry(self, rec: ReplicatedRecord, start: int, batches: QueueBatches, keyed: Keyed) -> None:
        """Add a replicated record's consume-queue entry to its queue's batch (topics the leader added are learnt)."""
        key = (rec.topic, rec.queue_id)
        kind = rec.properties.get(TXN_OP) if rec.properties is not None else None
        if kind == TOPIC_KIND and rec.properties is not None:
            self._topic_writes.adopt_holding_lock(*topic_of(rec.properties))  # a topic the leader created: here too, empty or not
        elif kind == TOPIC_DELETED_KIND and rec.properties is not None:
            self._topic_writes.drop_holding_lock(*topic_deleted_of(rec.properties), start + rec.at)  # and one it deleted
        if key not in batches:
            cfg = self._topics.get(rec.topic)
            if cfg is None or rec.queue_id >= cfg.queues:
                self._topics.learn(rec.topic, rec.queue_id + 1)
            if self._queues.log_start:  # a follower begun at the leader's log start: its queues begin where the leader's are
                self._appends.writable(key).begin_at(rec.queue_offset)
        self._appends.batch(batches, key)[1].append((start + rec.at, rec.size, rec.tag_hash))
        if rec.keys:
            keyed.append((rec.keys, start + rec.at, rec.size, rec.store_ms))

    def truncate(self, offset: int) -> bool:
        """Cut the log, the consume queues and the key index back to ``offset`` (a divergent tail, as the new leader
        says), and how far the log counts as fsynced with them; False when the log ends at or before it."""
        with self._lock:
            if offset >= self._log.end_offset:
                return False
            store_log.warning("truncating the commit log from %d to %d: the tail diverged from the leader's", self._log.end_offset, offset)
            self._log._truncate(offset)
            self._queues.trim_beyond(offset)
            self._group_commit.truncated(offset)
            self._keys.rewind(offset)
        return True
