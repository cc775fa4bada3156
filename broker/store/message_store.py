"""The store façade: topics, atomic appends, queue reads and durability (recovery and checkpoints: recovery.py).

Single writer: ``put`` is called from one thread (the broker's event loop) and
does the commit-log write and the consume-queue dispatch inside one lock, so a
checkpoint can snapshot a consistent (commit-log offset, queue sizes) pair.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from pathlib import Path

from . import acks_checkpoint
from .commit_log import CommitLog
from .consume_queue import ConsumeQueue
from .damaged_records import DamagedRecords
from .data_lock import DataDirLock
from .failure_watch import FailureWatch
from .flush_service import GroupCommitService, PeriodicService
from .key_index import KeyIndex
from .offset_table import OffsetTable
from .queue_reads import QueueReads
from .record import FLAG_BODY_BINARY, FLAG_GROUP_MORE, HEADER_SIZE, encode_parts, encode_properties, queue_code, record_size
from .recovery import StoreRecovery
from .replicated_groups import ReplicatedRecord, whole_groups
from .state_records import TXN_OP, StateRecord, topic_of, topic_record
from .store_types import GroupTooLarge, Listener, PutItem, PutResult, ReplicationMismatch, StoreClosed, StoreConfig, StoreNotWritable
from .topics import TXN_STATE_TOPIC, TopicConfig, TopicTable, is_system_topic
from .visible_reads import VisibleReads

log = logging.getLogger(__name__)

# A write group's consume-queue entries, by (topic, queue id): [next queue offset], [(log offset, size, tag hash)].
_QueueEntries = dict[tuple[str, int], tuple[list[int], list[tuple[int, int, int]]]]
TOPIC_KIND = StateRecord.TOPIC.value

class MessageStore(QueueReads, StoreRecovery):
    def __init__(self, config: StoreConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self._clock = clock
        root = Path(config.data_dir)
        root.mkdir(parents=True, exist_ok=True)
        self._lock_file = DataDirLock(root)
        self._lock_file.acquire()
        try:
            self._write_lock = threading.Lock()
            # One checkpoint at a time: a tail cut checkpoints from the replication thread while the periodic one runs;
            # both wrote checkpoint.json.tmp, and the later must write the later state (the cut's), not the earlier.
            self._checkpoint_lock = threading.Lock()
            self.topics = TopicTable(root / "topics.json")
            self.offsets = OffsetTable(root / "consumer_offsets.json")
            self.commit_log = CommitLog(root / "commitlog", config.segment_bytes)
            self._cq_root = root / "consumequeue"
            self._checkpoint_path = root / "checkpoint.json"
            self._queues: dict[tuple[str, int], ConsumeQueue] = {}
            self._listeners: list[Listener] = []
            self.damaged = DamagedRecords()
            self._writes = FailureWatch(
                "store unavailable: %s; writes are refused until the disk takes them again",
                "store available again: writes succeed", log)
            self._snapshots = FailureWatch(
                "cannot write the checkpoint and consumer offsets: %s; retrying every interval",
                "checkpoint and consumer offsets written again", log)
            self.read_only: str | None = None  # why no write is taken until a restart (unfinished recovery, failed fsync)
            self.keys = KeyIndex(root / "index", config.index_slots, config.index_entries, self.commit_log.read_record)
            self.recovery = self._recover()
        except BaseException:
            self._lock_file.release()
            raise
        self._group_commit = GroupCommitService(
            self.commit_log.flush, self.commit_log.end_offset,
            interval=config.async_flush_interval if config.flush_mode == "async" else None,
            on_failure=self._fsync_failed,
        )
        self._checkpoint_hooks: list[Callable[[], None]] = []
        self._checkpointer = PeriodicService("halfmq-checkpoint", self._checkpoint_then_hooks, config.checkpoint_interval)
        self._group_commit.start()
        self._checkpointer.start()
        self._closed = False
        self._topic_records = False
        self.visible = VisibleReads(self)  # what consumers may read: every read made for them goes through it

    # --- topics -----------------------------------------------------------------
    def topic(self, name: str) -> TopicConfig | None:
        return self.topics.get(name)

    def create_topic(self, name: str, queues: int) -> TopicConfig:
        """Create a topic durably before anything can be sent to it (StoreNotWritable if the disk refuses).

        Every queue gets its consume-queue directory first, so a lost topics.json
        can be rebuilt with the right queue counts. Then, in a broker's store
        (``log_topics``), a ``topic`` record goes in HALFMQ_TXN_STATE (``state_records``),
        so a broker set's followers have the topic too, empty or not; a caller that
        answers waits until the log end is durable.
        """
        with self._write_lock:
            existing = self.topics.get(name)
            if existing is not None:
                return existing
            self._check_writable()
            try:
                for qid in range(queues):
                    self._queue(name, qid)
                cfg = self.topics.put(name, queues)
            except OSError as exc:
                raise self._refused(f"cannot create topic {name!r}", exc) from exc
        if self._topic_records and not is_system_topic(name):  # system topics: made by every node as it opens, or learnt
            self.create_topic(TXN_STATE_TOPIC, 1)
            self.put([topic_record(name, queues)])
        return cfg

    def log_topics(self) -> None:
        """Write a ``topic`` record for every topic created from now on (a broker's runtime; a bare store writes none)."""
        self._topic_records = True

    def adopt_topic(self, name: str, queues: int) -> None:
        """A ``topic`` record read from the log (replay, or a follower's append): the topic exists with at least ``queues``."""
        with self._write_lock:
            self._adopt_topic(name, queues)

    def _adopt_topic(self, name: str, queues: int) -> None:
        cfg = self.topics.get(name)
        if cfg is not None and cfg.queues >= queues:
            return
        for qid in range(queues):
            self._writable_queue((name, qid))
        self.topics.learn(name, queues)

    @property
    def write_problem(self) -> str | None:
        """Why writes are refused now (read-only, or the last write failed), None while they work."""
        return self.read_only or self._writes.failure

    def queue_range(self, topic: str, queue_id: int) -> tuple[int, int]:
        cq = self._queues.get((topic, queue_id))
        return (cq.min_offset, cq.max_offset) if cq else (0, 0)

    def queue_codes(self, topic: str, queue_id: int, offset: int, count: int) -> list[int]:
        """Up to ``count`` consume-queue codes (``record.queue_code``) from ``offset``, fewer at a file boundary:
        how the timer index reads due times, with no commit-log read."""
        cq = self._queues.get((topic, queue_id))
        return [] if cq is None else cq.codes(offset, count)

    def add_listener(self, listener: Listener) -> None:
        """Called with (topic, queue_id) after messages land in that queue, on the writer's thread."""
        self._listeners.append(listener)

    def serve_anew(self) -> None:
        """The services above the store are built again while it stays open (a broker set's role change): the old
        ones' listeners, checkpoint hooks (a second timer index would write its stale state) and the visible bound go;
        what the log holds stays, and the new services derive from it."""
        with self._write_lock:
            self._listeners.clear()
            self._checkpoint_hooks = []  # a new list: the checkpoint thread may be walking the old one
            self.visible = VisibleReads(self)

    # --- writing ----------------------------------------------------------------
    def fits(self, items: list[PutItem]) -> bool:
        """Whether ``items`` fit one segment, the limit of an atomic write group.

        An upper bound first (UTF-8 takes at most 4 bytes a character), so the usual
        small message is not encoded twice; exact sizes only when it might not fit.
        """
        worst = sum(HEADER_SIZE + 4 * len(i.topic) + len(i.body) + 4 * sum(len(k) + len(v) + 2 for k, v in i.properties.items())
                    for i in items)
        if worst <= self.config.segment_bytes:
            return True
        size = sum(record_size(i.topic.encode(), encode_properties(i.properties), i.body) for i in items)
        return size <= self.config.segment_bytes

    def put(self, items: list[PutItem]) -> tuple[list[PutResult], int]:
        """Append ``items`` as one atomic write group; return results and the group's end offset."""
        if not items:
            raise ValueError("empty write group")
        now = int(self._clock() * 1000)
        parts, total = _encoded_parts(items)
        if total > self.config.segment_bytes:
            raise GroupTooLarge(f"a write group of {total} bytes exceeds the segment size {self.config.segment_bytes}")
        results: list[PutResult] = []
        last = len(items) - 1
        with self._write_lock:
            self._check_writable()
            try:
                offset = self.commit_log.next_offset_for(total)
            except OSError as exc:
                raise self._refused("cannot start a commit-log segment", exc) from exc
            queues: _QueueEntries = {}  # next offset, entries
            chunks: list[bytes] = []
            for i, it in enumerate(items):
                key = (it.topic, it.queue_id)
                queue = queues.get(key)
                if queue is None:
                    queue = queues[key] = ([self._writable_queue(key).max_offset], [])
                qoff = queue[0][0]
                queue[0][0] = qoff + 1
                t, p, size = parts[i]
                flags = (FLAG_BODY_BINARY if it.binary else 0) | (FLAG_GROUP_MORE if i < last else 0)
                chunks += encode_parts(t, it.queue_id, p, it.body, qoff, offset, it.born_timestamp or now, now, flags)
                results.append(PutResult(it.topic, it.queue_id, qoff, offset, size, it.properties, now))
                queue[1].append((offset, size, queue_code(it.topic, it.queue_id, it.properties, it.tag)))
                offset += size
            self._append_entries_then(queues, lambda: self.commit_log.write(b"".join(chunks)))
            self.keys.add_results(results, now)
        self._writes.succeeded()
        for key in queues:
            for listener in self._listeners:
                listener(*key)
        return results, offset

    def append_replicated(self, blob: bytes | memoryview, start: int) -> int:
        """Append a leader's log bytes at ``start`` unchanged (a follower of a broker set); return the new log end.

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
        keyed: list[tuple[list[tuple[str, str]], int, int, int]] = []  # followers answer journeys too
        with self._write_lock:
            self._check_writable()
            if start != self.commit_log.end_offset:
                raise ReplicationMismatch(f"replicated bytes start at {start}, the log ends at {self.commit_log.end_offset}")
            while g < len(ends):
                try:
                    self.commit_log.next_offset_for(ends[g] - pos)  # the run's first group: a new segment where the leader began one
                except OSError as exc:
                    raise self._refused("cannot start a commit-log segment", exc) from exc
                room = self.commit_log.segment_bytes - (self.commit_log.end_offset - self.commit_log.segment_bases()[-1])
                while g < len(ends) and ends[g] - pos <= room:
                    g += 1
                run_end = ends[g - 1]
                queues: _QueueEntries = {}
                while r < len(records) and records[r].at < run_end:
                    self._replicated_entry(records[r], start, queues, keyed)
                    r += 1
                self._append_entries_then(queues, partial(self.commit_log.write, view[pos:run_end]))
                touched.update(queues)
                pos = run_end
                self.keys.add_records(keyed)
                keyed.clear()
        if pos:
            self._writes.succeeded()
        for listener in self._listeners:
            for rec_key in touched:
                listener(*rec_key)
        return self.commit_log.end_offset

    def _replicated_entry(self, rec: ReplicatedRecord, start: int, queues: _QueueEntries,
                          keyed: list[tuple[list[tuple[str, str]], int, int, int]]) -> None:
        """Add a replicated record's consume-queue entry to its queue's batch (topics the leader added are learnt)."""
        key = (rec.topic, rec.queue_id)
        if rec.properties is not None and rec.properties.get(TXN_OP) == TOPIC_KIND:
            self._adopt_topic(*topic_of(rec.properties))  # a topic the leader created: here too, empty or not
        batch = queues.get(key)
        if batch is None:
            cfg = self.topics.get(rec.topic)
            if cfg is None or rec.queue_id >= cfg.queues:
                self.topics.learn(rec.topic, rec.queue_id + 1)
            batch = queues[key] = ([self._writable_queue(key).max_offset], [])
        batch[1].append((start + rec.at, rec.size, rec.tag_hash))
        if rec.keys:
            keyed.append((rec.keys, start + rec.at, rec.size, rec.store_ms))

    def truncate_log(self, offset: int) -> None:
        """Cut the log (and consume queues, offsets) back to ``offset``: a node's divergent tail, as its new leader says.

        Consumer offsets go back to the acks checkpoint's, which counts only acknowledged records (below any cut): an
        ack of the cut tail was never answered and must not hide its message; the next replay settles the rest again.
        """
        with self._write_lock:
            if offset >= self.commit_log.end_offset:
                return
            log.warning("truncating the commit log from %d to %d: the tail diverged from the leader's", self.commit_log.end_offset, offset)
            self.commit_log._truncate(offset)
            for cq in self._queues.values():
                cq.trim_beyond(offset)
            self._group_commit.truncated(offset)
            self.keys.rewind(offset)
        self.offsets.reset(acks_checkpoint.committed(self))  # offsets settled by acks of the cut tail go (the replay brings back the rest)
        self.offsets.clamp(lambda topic, qid: self.queue_range(topic, qid)[1])
        self.checkpoint()

    def _append_entries_then(self, queues: _QueueEntries, write_log: Callable[[], object]) -> None:
        """Consume-queue entries first, then the log; a refusal from the disk undoes the entries.

        In this order a failure leaves nothing behind: entries pointing past the log
        are cut here (and by recovery after a crash), whereas a log record without
        its entry would make the next message reuse its queue offset.
        """
        done: list[tuple[ConsumeQueue, int]] = []
        try:
            for key, (_, entries) in queues.items():
                cq = self._queues[key]
                done.append((cq, cq.max_offset))
                cq.append_many(entries)
            write_log()
        except OSError as exc:
            for cq, before in reversed(done):
                try:
                    cq.truncate_to(before)
                except OSError as undo:
                    self.read_only = f"cannot undo consume-queue entries of a failed write ({undo}); restart the broker"
                    log.error("store is read-only: %s", self.read_only)
            raise self._refused("cannot append messages", exc) from exc

    def _fsync_failed(self, exc: OSError) -> None:
        """After a failed fsync Linux may drop the unwritten pages and report it only once, so a later
        fsync that succeeds proves nothing about them: take no more writes, let recovery check the log."""
        if self.read_only is None:
            self.read_only = (f"an fsync of the commit log failed ({exc}); what was written since the last good "
                              "fsync may not be on disk: restart the broker so recovery checks the log")
            log.error("store is read-only: %s", self.read_only)

    def _check_writable(self) -> None:
        if self._closed:
            raise StoreClosed("the store is closed")
        if self.read_only is not None:
            raise StoreNotWritable(f"the store is read-only: {self.read_only}")

    def _refused(self, what: str, exc: OSError) -> StoreNotWritable:
        self._writes.failed(f"{what}: {exc}")
        return StoreNotWritable(f"{what}: {exc.strerror or exc}")

    def wait_flushed(self, offset: int) -> Future[int] | None:
        """A future resolved once ``offset`` is on disk; None in async mode (acknowledge after write)."""
        if self.config.flush_mode == "async":
            return None
        if self.read_only is not None and offset > self._group_commit.flushed_offset:
            raise StoreNotWritable(f"the store is read-only: {self.read_only}")  # no fsync after a failed one is trusted
        return self._group_commit.wait_for(offset)

    @property
    def flushed_offset(self) -> int:
        return self._group_commit.flushed_offset

    @property
    def acknowledged_end(self) -> int:
        """How far the log is as durable as a send's acknowledgement promises: fsynced (sync), written (async)."""
        return self.commit_log.end_offset if self.config.flush_mode == "async" else self._group_commit.flushed_offset

    @property
    def flush_count(self) -> int:
        return self._group_commit.flush_count

    # --- consume queues ---------------------------------------------------------
    def _queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            cq = ConsumeQueue(self._cq_root / topic / str(queue_id), topic, queue_id, self.config.consume_queue_entries)
            self._queues[(topic, queue_id)] = cq
        return cq

    def _writable_queue(self, key: tuple[str, int]) -> ConsumeQueue:
        """The queue a write appends to; a disk that refuses to open it is StoreNotWritable."""
        try:
            return self._queue(*key)
        except OSError as exc:
            raise self._refused(f"cannot open consume queue {key[0]}/{key[1]}", exc) from exc

    def close(self) -> None:
        with self._write_lock:
            if self._closed:
                return
            self._closed = True
        self._group_commit.stop()
        self._checkpointer.stop()
        for cq in self._queues.values():
            cq.close()
        self.commit_log.close()
        self.keys.close()
        self._lock_file.release()


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
