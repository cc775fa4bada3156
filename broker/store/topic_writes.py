"""Topics made durable before anything is sent to them, and learnt from the log on a set's followers.

``create`` writes the topic's consume-queue directories and topics.json under the store's write lock (so a lost
topics.json can be rebuilt with the right queue counts); in a broker's store (``log_records``) it also puts a
``topic`` record in HALFMQ_TXN_STATE (``state_records``), so a broker set's followers have the topic too, empty or
not. ``adopt`` is the other side: a ``topic`` record read from the log (a replay, a follower's append).
``set_retention`` changes a topic's own retention the same way (topics.json, then a ``topic`` record carrying the new
limits), and ``retain_from`` is where a pass of the topic's retention moves a queue's earliest retained offset.

``delete`` is an operator's deletion: a ``topic-deleted`` record with each queue's end, then the name leaves
topics.json and the queues' floors rise to those ends (what was written is hidden, its files left for retention);
``drop`` is its other side, the record read from the log.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .consume_queues import ConsumeQueues
from .queue_appends import QueueAppends
from .state_records import topic_deleted_record, topic_record
from .store_types import PutItem, PutResult
from .topics import TXN_STATE_TOPIC, TopicConfig, TopicTable, is_system_topic
from .write_gate import WriteGate


class TopicWrites:
    def __init__(self, table: TopicTable, queues: ConsumeQueues, appends: QueueAppends, gate: WriteGate,
                 write_lock: threading.Lock, put: Callable[[list[PutItem]], tuple[list[PutResult], int]]) -> None:
        self._table = table
        self._queues = queues
        self._appends = appends
        self._gate = gate
        self._lock = write_lock
        self._put = put  # the writer's: where a ``topic`` record goes
        self._records = False

    def log_records(self) -> None:
        """Write a ``topic`` record for every topic created from now on (a broker's runtime; a bare store writes none)."""
        self._records = True

    def create(self, name: str, queues: int, retention_ms: int | None = None, retention_bytes: int | None = None) -> TopicConfig:
        """Create a topic durably before anything can be sent to it (StoreNotWritable if the disk refuses); a caller
        that answers waits until the log end is durable (its ``topic`` record)."""
        with self._lock:
            existing = self._table.get(name)
            if existing is not None:
                return existing
            self._gate.check()
            try:
                for qid in range(queues):
                    self._queues.open(name, qid)
                cfg = self._table.put(name, queues, retention_ms, retention_bytes)
            except OSError as exc:
                raise self._gate.refused(f"cannot create topic {name!r}", exc) from exc
        if self._records and not is_system_topic(name):  # system topics: made by every node as it opens, or learnt
            self.create(TXN_STATE_TOPIC, 1)
            self._put([topic_record(name, queues, retention_ms, retention_bytes)])
        return cfg

    def set_retention(self, name: str, retention_ms: int | None, retention_bytes: int | None) -> tuple[TopicConfig, int]:
        """Change a topic's own retention durably (topics.json, then a ``topic`` record carrying the new limits, which a
        replay and a set's followers apply); return the topic and the log end to wait on durable (0: nothing written)."""
        with self._lock:
            cfg = self._table.get(name)
            if cfg is None:
                raise KeyError(name)  # the use case found it first (TopicService.get)
            if (cfg.retention_ms, cfg.retention_bytes) == (retention_ms, retention_bytes):
                return cfg, 0
            self._gate.check()
            try:
                cfg = self._table.put(name, cfg.queues, retention_ms, retention_bytes)
            except OSError as exc:
                raise self._gate.refused(f"cannot change topic {name!r}", exc) from exc
        end = 0
        if self._records:
            _, end = self._put([topic_record(name, cfg.queues, retention_ms, retention_bytes)])
        return cfg, end

    def delete(self, name: str) -> int:
        """Delete a topic through the log (its ``topic-deleted`` record first); return the record's end, which a caller
        that answers waits on durable. StoreNotWritable, and no change, if the disk refuses."""
        cfg = self._table.get(name)
        if cfg is None:
            return 0
        ends = {qid: self._queues.range(name, qid)[1] for qid in range(cfg.queues)}
        results, end = self._put([topic_deleted_record(name, ends)])
        self.drop(name, ends, results[0].commit_log_offset)
        return end

    def drop(self, name: str, ends: dict[int, int], at: int) -> None:
        """A ``topic-deleted`` record at log offset ``at`` (an operator's deletion, or one read from the log): the topic
        is gone, and what was written for it before ``at`` (a timer, say) is never put on a topic of its name."""
        with self._lock:
            self.drop_holding_lock(name, ends, at)

    def drop_holding_lock(self, name: str, ends: dict[int, int], at: int) -> None:
        """``drop`` for a caller that holds the write lock already (a follower's append, as it meets the record)."""
        for qid, end in ends.items():
            self._queues.raise_floor(name, qid, end)
        try:
            self._table.remove(name, at)
        except OSError as exc:
            raise self._gate.refused(f"cannot delete topic {name!r}", exc) from exc

    def retain_from(self, name: str, queue_id: int, offset: int) -> None:
        """Hide a queue's entries before ``offset`` from every reader: its topic's own retention let them go (the bytes
        go with their segments; topic_retention.py). In memory: every node sets it again from the same rule as the store opens,
        before it serves, and on each pass (decision 052, "Per-topic limits")."""
        self._queues.raise_floor(name, queue_id, offset)

    def adopt(self, name: str, queues: int, retention_ms: int | None = None, retention_bytes: int | None = None) -> None:
        """A ``topic`` record read from the log (replay): the topic exists with at least ``queues``, and the record's
        retention (each record carries the topic's current limits)."""
        with self._lock:
            self.adopt_holding_lock(name, queues, retention_ms, retention_bytes)

    def adopt_holding_lock(self, name: str, queues: int, retention_ms: int | None = None,
                           retention_bytes: int | None = None) -> None:
        """``adopt`` for a caller that holds the write lock already (a follower's append, as it meets the record)."""
        cfg = self._table.get(name)
        if cfg is None or cfg.queues < queues:
            for qid in range(queues):
                self._appends.writable((name, qid))
            self._table.learn(name, queues)
        self._table.learn_retention(name, retention_ms, retention_bytes)
