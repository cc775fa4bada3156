"""Recovery and checkpoints of the store: what runs once at start, and what makes the derived files durable.

A mixin of MessageStore (message_store.py), kept in its own module because it is a separate concern: after
a crash, bring the consume queues, topics and offsets back in line with the commit log (the one source of
truth); while running, checkpoint how far the log is dispatched so the next recovery scans only the tail.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from .atomic_file import DamagedFile, read_json, write_json
from .commit_log import CommitLog, CorruptLogError, Damage
from .failure_watch import FailureWatch
from .offset_table import OffsetTable
from .record import queue_code
from .store_types import RecoveryReport
from .topics import TopicTable

if TYPE_CHECKING:
    from .consume_queue import ConsumeQueue
    from .key_index import KeyIndex

log = logging.getLogger("halfmq.broker.store.message_store")  # one logger name for the store, as before the split


class StoreRecovery:
    """The recovery and checkpoint steps of MessageStore; the attributes below are MessageStore's."""

    commit_log: CommitLog
    topics: TopicTable
    offsets: OffsetTable
    read_only: str | None
    _checkpoint_path: Path
    _cq_root: Path
    _queues: dict[tuple[str, int], ConsumeQueue]
    _write_lock: threading.Lock
    _checkpoint_lock: threading.Lock
    _snapshots: FailureWatch
    _checkpoint_hooks: list[Callable[[], None]]
    keys: KeyIndex

    def _queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        raise NotImplementedError

    def queue_range(self, topic: str, queue_id: int) -> tuple[int, int]:
        raise NotImplementedError

    def checkpoint(self) -> None:
        """Make consume queues and offsets durable and record how far the log is dispatched.

        A disk that refuses is logged once (not each second) and retried next time.
        Topics recovery found but could not save are saved first: the checkpoint
        must not move past the records they were learnt from. A read-only store
        (recovery unfinished) writes consumer offsets only.
        """
        # Offsets are taken before the fsync: a persisted offset may then only point at
        # records the fsync below made durable (the transaction checkpoint relies on it).
        with self._checkpoint_lock:
            self._checkpoint()

    def add_checkpoint_hook(self, hook: Callable[[], None]) -> None:
        """Called on the checkpoint thread after each periodic checkpoint (the timer index writes its runs there)."""
        self._checkpoint_hooks.append(hook)

    def _checkpoint_then_hooks(self) -> None:
        self.checkpoint()
        for hook in self._checkpoint_hooks:
            try:
                hook()
            except Exception:  # a hook's failure (a full disk) must not stop the store's own checkpoints
                log.exception("a checkpoint hook failed; retrying at the next checkpoint")

    def _checkpoint(self) -> None:
        offsets = self.offsets.snapshot()
        try:
            with self._write_lock:
                dispatched = self.commit_log.end_offset
                sizes = {f"{t}/{q}": cq.max_offset for (t, q), cq in self._queues.items()}
                queues = list(self._queues.values())
            flushed = self.commit_log.flush()
            if self.read_only is None:
                for cq in queues:
                    cq.flush()
                index_upto = self.keys.flush()
                with self._write_lock:  # create_topic writes the same file
                    self.topics.save_if_changed()
                write_json(self._checkpoint_path, {"commit_log_offset": min(dispatched, flushed), "queues": sizes,
                                                    "index_upto": min(index_upto, flushed)})
            self.offsets.write(offsets)
        except OSError as exc:
            self.offsets.unsaved()
            self._snapshots.failed(exc)
            return
        self._snapshots.succeeded()

    def _recover(self) -> RecoveryReport:
        started = time.monotonic()
        ckpt = self._read_checkpoint()
        log_end_before = self.commit_log.end_offset
        start = ckpt["commit_log_offset"] if ckpt else self.commit_log.min_offset
        self.keys.rewind(min(start, (ckpt or {}).get("index_upto", 0)))  # the index's pages past it may be lost
        if start > log_end_before:
            # The log lost bytes the checkpoint had seen (power loss, or a hand-made tear): the
            # last segment's base is the nearest offset known to be a record boundary.
            start = self.commit_log.segment_bases()[-1]
        for _ in self.commit_log.recover(start):
            pass
        end = self.commit_log.end_offset
        known = {(cfg.name, q) for cfg in self.topics.all() for q in range(cfg.queues)}
        on_disk = self._queues_on_disk()
        known |= on_disk
        if not self.topics.found and on_disk:
            self._rebuild_topics(on_disk)
        replay_from, trimmed = self._trim_queues(sorted(known), end, (ckpt or {}).get("queues", {}), start)
        # the index resumes where its last whole flush stopped (a refused write, lost pages): the scan starts there too
        replay_from = min(replay_from, self.keys.upto)
        rebuilt = self._replay_or_stop_writes(replay_from)
        if self.read_only is None:  # half-rebuilt queue ends would lower offsets for good
            for group, topic, qid, was, now in self.offsets.clamp(lambda topic, qid: self.queue_range(topic, qid)[1]):
                log.warning("offset of group %s on %s/%d lowered from %d to %d, the end of the recovered queue",
                            group, topic, qid, was, now)
        report = RecoveryReport(end, replay_from, rebuilt, trimmed, time.monotonic() - started)
        if rebuilt or trimmed or log_end_before != end:
            log.warning("recovered store: %s", report)
        self.checkpoint()
        return report

    def _read_checkpoint(self) -> dict | None:
        try:
            return read_json(self._checkpoint_path, None, _parse_checkpoint)
        except DamagedFile as exc:
            log.warning("%s; it is derived: scanning the whole commit log instead", exc)
            return None

    def _queues_on_disk(self) -> set[tuple[str, int]]:
        on_disk: set[tuple[str, int]] = set()
        if self._cq_root.exists():
            for topic_dir in self._cq_root.iterdir():
                for qdir in topic_dir.iterdir():
                    if qdir.name.isdigit():
                        on_disk.add((topic_dir.name, int(qdir.name)))
        return on_disk

    def _trim_queues(self, queues: list[tuple[str, int]], end: int, expected: dict[str, int], replay_from: int) -> tuple[int, int]:
        """Cut entries past the log's ``end``; return where replay must start for the queues short of the checkpoint
        (or repaired), and how many entries were cut."""
        trimmed = 0
        for topic, qid in queues:
            cq = self._queue(topic, qid)
            trimmed += cq.trim_beyond(end)
            if cq.repaired or cq.max_offset < expected.get(f"{topic}/{qid}", 0):
                last = cq.last_entry()
                replay_from = min(replay_from, last.commit_log_offset + last.size if last else self.commit_log.min_offset)
        return replay_from, trimmed

    def _replay_or_stop_writes(self, start: int) -> int:
        """``_replay``; a disk that refuses makes the store read-only (0 entries added)."""
        try:
            return self._replay(start)
        except OSError as exc:
            self.read_only = (f"recovery could not rebuild the consume queues ({exc.strerror or exc}); "
                              "restart the broker once the disk has room")
            log.error("store is read-only: %s", self.read_only)
            return 0

    def _replay(self, start: int) -> int:
        """Dispatch the log from ``start`` into consume queues that lack it; return entries added.

        Recovery has validated the log past the checkpoint, so damage met here lies
        behind it: a queue offset whose record is damaged gets an entry pointing at
        the damage (reads report it), so the queue keeps its offsets without a hole.
        """
        rebuilt = 0
        damage: Damage | None = None
        for _, rec in self.commit_log.walk(start):
            if isinstance(rec, Damage):
                if rec.next_valid is None:
                    break
                damage = rec
                continue
            self.keys.add(rec.topic, rec.properties, rec.commit_log_offset, rec.size, rec.store_timestamp)
            cfg = self.topics.get(rec.topic)
            if cfg is None or rec.queue_id >= cfg.queues:
                self.topics.learn(rec.topic, rec.queue_id + 1)
            cq = self._queue(rec.topic, rec.queue_id)
            if rec.queue_offset > cq.max_offset and damage is not None:
                log.warning("consume queue %s/%d: offsets %d to %d index damaged records (%s)", rec.topic, rec.queue_id,
                            cq.max_offset, rec.queue_offset - 1, damage)
                while cq.max_offset < rec.queue_offset:
                    cq.append(damage.offset, 0, 0)
                    rebuilt += 1
            if rec.queue_offset == cq.max_offset:
                cq.append(rec.commit_log_offset, rec.size, queue_code(rec.topic, rec.queue_id, rec.properties, rec.properties.get("TAGS")))
                rebuilt += 1
            elif rec.queue_offset > cq.max_offset:
                raise CorruptLogError(
                    f"consume queue {rec.topic}/{rec.queue_id} ends at {cq.max_offset} but the commit log holds "
                    f"queue offset {rec.queue_offset} at {rec.commit_log_offset}; delete the consumequeue directory to rebuild it"
                )
        return rebuilt

    def _rebuild_topics(self, queues: set[tuple[str, int]]) -> None:
        """topics.json is gone but the consume queues are there: one topic per directory, as many queues as it has."""
        counts: dict[str, int] = {}
        for topic, qid in queues:
            counts[topic] = max(counts.get(topic, 0), qid + 1)
        for topic, count in sorted(counts.items()):
            self.topics.learn(topic, count)
        log.warning("%s is missing: rebuilt %d topics from the consume-queue directories: %s",
                    self.topics.path, len(counts), ", ".join(f"{t} ({n} queues)" for t, n in sorted(counts.items())))


def _parse_checkpoint(raw: dict) -> dict:
    if not isinstance(raw["commit_log_offset"], int) or not isinstance(raw.get("queues", {}), dict):
        raise ValueError("unexpected checkpoint layout")
    return raw
