"""The checkpoint: what makes the store's derived files durable, and how far the log is dispatched into them.

Every ``checkpoint_interval`` (and on demand: after recovery, after a cut of the log's tail) the consume queues,
the key index, topics.json and the consumer offsets are flushed, and ``checkpoint.json`` records the commit-log
offset they hold (``{commit_log_offset, queues, index_upto}``), so the next recovery scans only the log past it
(recovery.py). Hooks run after each periodic one on the same thread (the timer index writes its runs there).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from .atomic_file import DamagedFile, read_json, write_json
from .commit_log import CommitLog
from .consume_queues import ConsumeQueues
from .failure_watch import FailureWatch
from .flush_service import PeriodicService
from .key_index import KeyIndex
from .offset_table import OffsetTable
from .store_types import store_log
from .topics import TopicTable
from .write_gate import WriteGate

log = store_log


class Checkpoints:
    def __init__(self, path: Path, commit_log: CommitLog, queues: ConsumeQueues, keys: KeyIndex, topics: TopicTable,
                 offsets: OffsetTable, gate: WriteGate, write_lock: threading.Lock) -> None:
        self.path = path
        self._log = commit_log
        self._queues = queues
        self._keys = keys
        self._topics = topics
        self._offsets = offsets
        self._gate = gate
        self._write_lock = write_lock
        # One checkpoint at a time: a tail cut checkpoints from the replication thread while the periodic one runs;
        # both wrote checkpoint.json.tmp, and the later must write the later state (the cut's), not the earlier.
        self._lock = threading.Lock()
        self._snapshots = FailureWatch(
            "cannot write the checkpoint and consumer offsets: %s; retrying every interval",
            "checkpoint and consumer offsets written again", log)
        self.hooks: list[Callable[[], None]] = []
        self._periodic: PeriodicService | None = None

    def read(self) -> dict | None:
        """The last checkpoint, or None (none yet, or damaged: it is derived, so recovery scans the whole log)."""
        try:
            return read_json(self.path, None, _parse_checkpoint)
        except DamagedFile as exc:
            log.warning("%s; it is derived: scanning the whole commit log instead", exc)
            return None

    def take(self) -> None:
        """Make consume queues and offsets durable and record how far the log is dispatched.

        A disk that refuses is logged once (not each second) and retried next time.
        Topics recovery found but could not save are saved first: the checkpoint
        must not move past the records they were learnt from. A read-only store
        (recovery unfinished) writes consumer offsets only.
        """
        # Offsets are taken before the fsync: a persisted offset may then only point at
        # records the fsync below made durable (the transaction checkpoint relies on it).
        with self._lock:
            self._take()

    def _take(self) -> None:
        offsets = self._offsets.snapshot()
        try:
            with self._write_lock:
                dispatched = self._log.end_offset
                sizes = self._queues.sizes()
                queues = self._queues.all()
            flushed = self._log.flush()
            if self._gate.read_only is None:
                for cq in queues:
                    cq.flush()
                index_upto = self._keys.flush()
                with self._write_lock:  # creating a topic writes the same file
                    self._topics.save_if_changed()
                write_json(self.path, {"commit_log_offset": min(dispatched, flushed), "queues": sizes,
                                       "index_upto": min(index_upto, flushed)})
            self._offsets.write(offsets)
        except OSError as exc:
            self._offsets.unsaved()
            self._snapshots.failed(exc)
            return
        self._snapshots.succeeded()

    def add_hook(self, hook: Callable[[], None]) -> None:
        """Called on the checkpoint thread after each periodic checkpoint (the timer index writes its runs there)."""
        self.hooks.append(hook)

    def drop_hooks(self) -> None:
        """Forget every hook (the services above the store are built again: a second timer index would write its stale state)."""
        self.hooks = []  # a new list: the checkpoint thread may be walking the old one

    def start(self, interval: float) -> None:
        """Checkpoint every ``interval`` seconds on a thread of its own, then run the hooks, until ``stop``."""
        self._periodic = PeriodicService("halfmq-checkpoint", self._take_then_hooks, interval)
        self._periodic.start()

    def stop(self) -> None:
        """Stop the thread after one last checkpoint."""
        if self._periodic is not None:
            self._periodic.stop()

    def _take_then_hooks(self) -> None:
        self.take()
        for hook in self.hooks:
            try:
                hook()
            except Exception:  # a hook's failure (a full disk) must not stop the store's own checkpoints
                log.exception("a checkpoint hook failed; retrying at the next checkpoint")


def _parse_checkpoint(raw: dict) -> dict:
    if not isinstance(raw["commit_log_offset"], int) or not isinstance(raw.get("queues", {}), dict):
        raise ValueError("unexpected checkpoint layout")
    return raw
