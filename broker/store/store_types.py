"""The store's values and errors: what a caller puts, what it gets back, and why a write was refused.

Kept apart from the façade (message_store.py) so that readers of these names need not read the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, NamedTuple

Listener = Callable[[str, int], None]


@dataclass(frozen=True)
class StoreConfig:
    data_dir: Path
    segment_bytes: int = 1 << 30
    consume_queue_entries: int = 300_000
    flush_mode: Literal["sync", "async"] = "sync"
    async_flush_interval: float = 0.2
    checkpoint_interval: float = 1.0
    index_slots: int = 1_000_000  # the key index's hash slots and entries per file (key_index.py; small in tests)
    index_entries: int = 4_000_000
    index_filter_bits: int = 8  # bits a key of each key-index file's filter (key_index.KeyFilter; 0: none)
    open_files: int = 256  # descriptors kept open for reading the store's files (file_handles.py), the coldest closed past it


@dataclass(slots=True)
class PutItem:
    topic: str
    queue_id: int
    body: bytes
    properties: dict[str, str] = field(default_factory=dict)
    born_timestamp: int = 0
    binary: bool = False
    tag: str | None = None


class PutResult(NamedTuple):
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    size: int
    properties: dict[str, str]
    store_timestamp: int = 0


@dataclass(frozen=True, slots=True)
class RecoveryReport:
    commit_log_end: int
    scanned_from: int
    entries_rebuilt: int
    entries_trimmed: int
    seconds: float


class StoreClosed(Exception):
    pass


class StoreNotWritable(Exception):
    """The disk refused a write (full, over quota, failing): nothing of it is stored; trying later may work."""


class ReplicationMismatch(Exception):
    """Bytes from a leader do not continue this log where they claim to: the follower must resynchronise."""


class GroupTooLarge(ValueError):
    """An atomic write group must fit one segment."""


# Every part of the store logs under the façade's name, as the store did before it had parts: operators filter on it.
store_log = logging.getLogger("halfmq.broker.store.message_store")
