"""Recovery: what runs once as the store opens, and what it found (``RecoveryReport``).

After a crash, bring the consume queues, the key index, topics and offsets back in line with the commit log (the
one source of truth): the log's torn tail is cut (a write group whole or not at all), queue entries past it go,
queues short of the last checkpoint (checkpoints.py) or repaired are refilled from the log, topics.json is rebuilt
from the consume-queue directories if it is gone, and consumer offsets past a lost tail are lowered. A disk that
refuses the rebuild leaves the store read-only (write_gate.py) rather than half-rebuilt.
"""

from __future__ import annotations

import time

from .checkpoints import Checkpoints
from .commit_log import CommitLog, CorruptLogError, Damage
from .consume_queues import ConsumeQueues, QueueKey
from .key_index import KeyIndex
from .offset_table import OffsetTable
from .record import queue_code
from .store_types import RecoveryReport, store_log
from .topics import TopicTable
from .write_gate import WriteGate

log = store_log


class Recovery:
    def __init__(self, commit_log: CommitLog, queues: ConsumeQueues, keys: KeyIndex, topics: TopicTable,
                 offsets: OffsetTable, checkpoints: Checkpoints, gate: WriteGate) -> None:
        self._log = commit_log
        self._queues = queues
        self._keys = keys
        self._topics = topics
        self._offsets = offsets
        self._checkpoints = checkpoints
        self._gate = gate

    def run(self) -> RecoveryReport:
        """Recover from the last checkpoint (the whole log without one), checkpoint, and say what was found."""
        started = time.monotonic()
        ckpt = self._checkpoints.read()
        log_end_before = self._log.end_offset
        start = ckpt["commit_log_offset"] if ckpt else self._log.min_offset
        self._keys.rewind(min(start, (ckpt or {}).get("index_upto", 0)))  # the index's pages past it may be lost
        if start > log_end_before:
            # The log lost bytes the checkpoint had seen (power loss, or a hand-made tear): the
            # last segment's base is the nearest offset known to be a record boundary.
            start = self._log.segment_bases()[-1]
        for _ in self._log.recover(start):
            pass
        end = self._log.end_offset
        known = {(cfg.name, q) for cfg in self._topics.all() for q in range(cfg.queues)}
        on_disk = self._queues.on_disk()
        known |= on_disk
        if not self._topics.found and on_disk:
            self._rebuild_topics(on_disk)
        replay_from, trimmed = self._trim_queues(sorted(known), end, (ckpt or {}).get("queues", {}), start)
        # the index resumes where its last whole flush stopped (a refused write, lost pages): the scan starts there too
        replay_from = min(replay_from, self._keys.upto)
        rebuilt = self._replay_or_stop_writes(replay_from)
        if self._gate.read_only is None:  # half-rebuilt queue ends would lower offsets for good
            for group, topic, qid, was, now in self._offsets.clamp(lambda topic, qid: self._queues.range(topic, qid)[1]):
                log.warning("offset of group %s on %s/%d lowered from %d to %d, the end of the recovered queue",
                            group, topic, qid, was, now)
        report = RecoveryReport(end, replay_from, rebuilt, trimmed, time.monotonic() - started)
        if rebuilt or trimmed or log_end_before != end:
            log.warning("recovered store: %s", report)
        self._checkpoints.take()
        return report

    def _trim_queues(self, queues: list[QueueKey], end: int, expected: dict[str, int], replay_from: int) -> tuple[int, int]:
        """Cut entries past the log's ``end``; return where replay must start for the queues short of the checkpoint
        (or repaired), and how many entries were cut."""
        trimmed = 0
        for topic, qid in queues:
            cq = self._queues.open(topic, qid)
            trimmed += cq.trim_beyond(end)
            if cq.repaired or cq.max_offset < expected.get(f"{topic}/{qid}", 0):
                last = cq.last_entry()
                replay_from = min(replay_from, last.commit_log_offset + last.size if last else self._log.min_offset)
        return replay_from, trimmed

    def _replay_or_stop_writes(self, start: int) -> int:
        """``_replay``; a disk that refuses makes the store read-only (0 entries added)."""
        try:
            return self._replay(start)
        except OSError as exc:
            self._gate.stop_writes(f"recovery could not rebuild the consume queues ({exc.strerror or exc}); "
                                   "restart the broker once the disk has room")
            return 0

    def _replay(self, start: int) -> int:
        """Dispatch the log from ``start`` into consume queues that lack it; return entries added.

        Recovery has validated the log past the checkpoint, so damage met here lies
        behind it: a queue offset whose record is damaged gets an entry pointing at
        the damage (reads report it), so the queue keeps its offsets without a hole.
        """
        rebuilt = 0
        damage: Damage | None = None
        for _, rec in self._log.walk(start):
            if isinstance(rec, Damage):
                if rec.next_valid is None:
                    break
                damage = rec
                continue
            self._keys.add(rec.topic, rec.properties, rec.commit_log_offset, rec.size, rec.store_timestamp)
            cfg = self._topics.get(rec.topic)
            if cfg is None or rec.queue_id >= cfg.queues:
                self._topics.learn(rec.topic, rec.queue_id + 1)
            cq = self._queues.open(rec.topic, rec.queue_id)
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

    def _rebuild_topics(self, queues: set[QueueKey]) -> None:
        """topics.json is gone but the consume queues are there: one topic per directory, as many queues as it has."""
        counts: dict[str, int] = {}
        for topic, qid in queues:
            counts[topic] = max(counts.get(topic, 0), qid + 1)
        for topic, count in sorted(counts.items()):
            self._topics.learn(topic, count)
        log.warning("%s is missing: rebuilt %d topics from the consume-queue directories: %s",
                    self._topics.path, len(counts), ", ".join(f"{t} ({n} queues)" for t, n in sorted(counts.items())))
