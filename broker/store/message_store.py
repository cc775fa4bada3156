"""The store: one commit log, its consume queues and what derives from them, behind one façade.

The façade opens the parts in order and holds them; each part keeps its own state and is handed what it uses:

- ``writer.py``: the single writer (``put``: a write group in the log and its queue entries, under one lock);
- ``replica_append.py``: a follower's writer (the leader's bytes appended unchanged, a divergent tail cut back);
- ``topic_writes.py``: topics made durable before anything is sent to them;
- ``recovery.py``: what runs once at open (``recovery``, its report); ``checkpoints.py``: the periodic checkpoint;
- ``queue_reads.py`` (``reads``): every read of the whole log; ``visible_reads.py`` (``visible``): what consumers see;
- ``write_gate.py``: whether writes are taken now (closed, read-only, refused by the disk).

Sends, the domain and the fronts call the façade (or ``reads``/``visible``); the parts call each other only
through what the façade handed them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from . import state_snapshot
from .checkpoints import Checkpoints
from .commit_log import CommitLog
from .consume_queues import ConsumeQueues
from .damaged_records import DamagedRecords
from .data_lock import DataDirLock
from .file_handles import FileHandles
from .flush_service import GroupCommitService
from .key_index import KeyIndex
from .log_start import LogStart, finish_begin
from .offset_table import OffsetTable
from .queue_appends import QueueAppends
from .queue_reads import QueueReads
from .recovery import Recovery
from .replica_append import ReplicaAppender
from .store_types import GroupTooLarge, Listener, PutItem, PutResult, ReplicationMismatch, StoreClosed, StoreConfig, StoreNotWritable
from .topic_writes import TopicWrites
from .topics import TopicConfig, TopicTable
from .visible_reads import VisibleReads
from .write_gate import WriteGate
from .writer import Writer

# Re-exported: callers import the store's values and errors with the store.
__all__ = ["GroupTooLarge", "Listener", "MessageStore", "PutItem", "PutResult", "ReplicationMismatch", "StoreClosed",
           "StoreConfig", "StoreNotWritable"]


class MessageStore:
    def __init__(self, config: StoreConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        root = Path(config.data_dir)
        root.mkdir(parents=True, exist_ok=True)
        self._lock_file = DataDirLock(root)
        self._lock_file.acquire()
        try:
            finish_begin(root)  # a follower's switch to its leader's log start that a crash interrupted (log_start.py)
            self._write_lock = threading.Lock()
            self._gate = WriteGate()
            self._listeners: list[Listener] = []
            self.topics = TopicTable(root / "topics.json")
            self.offsets = OffsetTable(root / "consumer_offsets.json")
            self.file_handles = FileHandles(config.open_files)  # one bound for every file the store reads
            self.commit_log = CommitLog(root / "commitlog", config.segment_bytes, self.file_handles)
            self.log_start = LogStart(root, self.commit_log, self._gate, self._drop_below)  # retention moves it
            self._queues = ConsumeQueues(root / "consumequeue", config.consume_queue_entries, self.file_handles)
            self._queues.log_start = self.log_start.offset
            self.damaged = DamagedRecords()
            self.keys = KeyIndex(root / "index", config.index_slots, config.index_entries, self.commit_log.read_record,
                                 self.file_handles, config.index_filter_bits)
            self.reads = QueueReads(self.commit_log, self._queues, self.damaged)
            self._checkpoints = Checkpoints(root / "checkpoint.json", self.commit_log, self._queues, self.keys, self.topics,
                                            self.offsets, self._gate, self._write_lock)
            self.recovery = Recovery(self.commit_log, self._queues, self.keys, self.topics, self.offsets,
                                     self._checkpoints, self._gate).run()
        except BaseException:
            self._lock_file.release()
            raise
        self._group_commit = GroupCommitService(
            self.commit_log.flush, self.commit_log.end_offset,
            interval=config.async_flush_interval if config.flush_mode == "async" else None,
            on_failure=self._gate.fsync_failed,
        )
        appends = QueueAppends(self._queues, self._gate)
        self._writer = Writer(self.commit_log, appends, self.keys, self._gate, self._write_lock, self._listeners, clock)
        self.topic_writes = TopicWrites(self.topics, self._queues, appends, self._gate, self._write_lock, self._writer.put)
        self._replica = ReplicaAppender(self.commit_log, self._queues, appends, self.topics, self.topic_writes, self.keys,
                                        self._group_commit, self._gate, self._write_lock, self._listeners)
        self._group_commit.start()
        self._checkpoints.start(config.checkpoint_interval)
        self.visible = VisibleReads(self.reads, self.commit_log, self._listeners)  # every read made for consumers goes through it

    def _drop_below(self, log_start: int) -> list[Path]:
        """The consume queues and the key index drop their files below ``log_start`` (``LogStart.advance``)."""
        with self._write_lock:
            return self._queues.forget_below(log_start) + self.keys.forget_below(log_start)

    # --- topics -----------------------------------------------------------------
    def topic(self, name: str) -> TopicConfig | None:
        return self.topics.get(name)

    def create_topic(self, name: str, queues: int, retention_ms: int | None = None,
                     retention_bytes: int | None = None) -> TopicConfig:
        """Create a topic durably before anything can be sent to it (StoreNotWritable if the disk refuses); see topic_writes."""
        return self.topic_writes.create(name, queues, retention_ms, retention_bytes)

    def log_topics(self) -> None:
        """Write a ``topic`` record for every topic created from now on (a broker's runtime; a bare store writes none)."""
        self.topic_writes.log_records()

    def adopt_topic(self, name: str, queues: int, retention_ms: int | None = None, retention_bytes: int | None = None) -> None:
        """A ``topic`` record read from the log (replay): the topic exists with at least ``queues``, and its retention."""
        self.topic_writes.adopt(name, queues, retention_ms, retention_bytes)

    def delete_topic(self, name: str, ends: dict[int, int] | None = None, at: int = 0) -> int:
        """Delete a topic through the log (a ``topic-deleted`` record); return its end, to wait on durable. Its files
        stay until retention takes them; a topic made again under the name begins where this one ended. With ``ends``:
        such a record read back from the log at offset ``at`` (replay), applied without a write (0 returned)."""
        if ends is not None:
            self.topic_writes.drop(name, ends, at)
            return 0
        return self.topic_writes.delete(name)

    # --- writing ----------------------------------------------------------------
    def fits(self, items: list[PutItem]) -> bool:
        """Whether ``items`` fit one segment, the limit of an atomic write group."""
        return self._writer.fits(items)

    def put(self, items: list[PutItem]) -> tuple[list[PutResult], int]:
        """Append ``items`` as one atomic write group; return results and the group's end offset."""
        return self._writer.put(items)

    def append_replicated(self, blob: bytes | memoryview, start: int) -> int:
        """Append a leader's log bytes at ``start`` unchanged (a follower of a broker set); return the new log end."""
        return self._replica.append(blob, start)

    def truncate_log(self, offset: int) -> None:
        """Cut the log (and consume queues, offsets) back to ``offset``: a node's divergent tail, as its new leader says.

        Consumer offsets go back to the acks checkpoint's, which counts only acknowledged records (below any cut): an
        ack of the cut tail was never answered and must not hide its message; the next replay settles the rest again.
        """
        if not self._replica.truncate(offset):
            return
        self.offsets.reset(state_snapshot.committed(self))  # offsets settled by acks of the cut tail go (the replay brings back the rest)
        self.offsets.clamp(lambda topic, qid: self.reads.queue_range(topic, qid)[1])
        self.checkpoint()

    @property
    def write_problem(self) -> str | None:
        """Why writes are refused now (read-only, or the last write failed), None while they work."""
        return self._gate.problem

    def add_listener(self, listener: Listener) -> None:
        """Called with (topic, queue_id) after messages land in that queue, on the writer's thread."""
        self._listeners.append(listener)

    # --- durability -------------------------------------------------------------
    def wait_flushed(self, offset: int) -> Future[int] | None:
        """A future resolved once ``offset`` is on disk; None in async mode (acknowledge after write)."""
        if self.config.flush_mode == "async":
            return None
        if self._gate.read_only is not None and offset > self._group_commit.flushed_offset:
            raise StoreNotWritable(f"the store is read-only: {self._gate.read_only}")  # no fsync after a failed one is trusted
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

    def checkpoint(self) -> None:
        """Make the derived files durable now and record how far the log is dispatched (checkpoints.py)."""
        self._checkpoints.take()

    def add_checkpoint_hook(self, hook: Callable[[], None]) -> None:
        """Called on the checkpoint thread after each periodic checkpoint (the timer index writes its runs there)."""
        self._checkpoints.add_hook(hook)

    # --- life -------------------------------------------------------------------
    def serve_anew(self) -> None:
        """The services above the store are built again while it stays open (a broker set's role change): the old
        ones' listeners, checkpoint hooks (a second timer index would write its stale state) and the visible bound go;
        what the log holds stays, and the new services derive from it."""
        with self._write_lock:
            self._listeners.clear()
            self._checkpoints.drop_hooks()
            self.visible = VisibleReads(self.reads, self.commit_log, self._listeners)

    def close(self) -> None:
        with self._write_lock:
            if self._gate.closed:
                return
            self._gate.closed = True
        self._group_commit.stop()
        self._checkpoints.stop()
        self._queues.close()
        self.commit_log.close()
        self.keys.close()
        self._lock_file.release()
