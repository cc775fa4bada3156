"""The key index: find a record by its id or one of its keys without scanning the log (RocketMQ's IndexFile shape).

What is indexed, one rule: a record's ``UNIQ_KEY``, each of its ``KEYS`` (space-separated) and each of its
``INDEX_KEYS`` (a property the domain sets; the store never parses bodies). Files ``index/<first commit-log
offset>``, each a header, ``slots`` 4-byte hash slots and ``entries`` 20-byte entries::

    header  begin_ms i64 | last_ms i64 | begin_offset i64 | upto i64 | entries_used u32 | reserved u32   (40 bytes)
    slot    the 1-based number of the newest entry whose key hashes there (0: none)
    entry   crc32c(key) u32 | commit-log offset i64 | seconds since begin_ms u32 | previous entry u32

Entries are written under the store's write lock with ``pwrite`` and read with ``pread``, entry before slot so a
concurrent reader only ever follows complete chains; the checkpoint fsyncs them and records ``upto``. No mmap: touching
a hole of a sparse file through one on a full disk (tmpfs allocates even on a read) kills the process with SIGBUS (the
queue checker's full-disk fault did), where ``pwrite`` answers ENOSPC and ``pread`` of a hole reads zeros. A refused
write stops the index where it is (logged); the next start indexes the log again from there, and the broker goes on.
A query walks a slot's chain newest first, then reads each hit and keeps only the records that carry the key: two
keys with one hash, a duplicate entry left by a replay, or an entry of a tail cut since, are told apart there.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import crc32c

from .record import StoredMessage
from .store_types import PutResult

UNIQ_KEY = "UNIQ_KEY"
KEYS = "KEYS"
INDEX_KEYS = "INDEX_KEYS"
TRANSACTION_ID = "TRANSACTION_ID"  # RocketMQ's, on a half, its final, its ops and markers: indexed as a key too
KEY_SEPARATOR = " "

_HEADER = struct.Struct("<qqqqII")
_SLOT = struct.Struct("<I")
_ENTRY = struct.Struct("<IqII")
_EMPTY = bytes(_ENTRY.size)
_pwrite = os.pwrite  # (the one door to the disk for index writes: a test makes it refuse, as a full disk does)
log = logging.getLogger(__name__)
MAX_WALK = 4096  # entries a query follows in one file's chain before it stops (a bounded cost)


def position_key(topic: str, queue_id: int, offset: int) -> str:
    """The key of a message's place, as the records about it (journal lines, acks) index it: ``topic/queue@offset``."""
    return f"{topic}/{queue_id}@{offset}"


def key_hash(key: str) -> int:
    return crc32c.crc32c(key.encode())


def record_keys(props: dict[str, str]) -> list[str]:
    """The keys a record is found by: its UNIQ_KEY, each of its KEYS and INDEX_KEYS, its TRANSACTION_ID (no duplicates)."""
    keys: list[str] = []
    uniq = props.get(UNIQ_KEY)
    if uniq:
        keys.append(uniq)
    if uniq and len(props) == 1:  # the common message: only its UNIQ_KEY
        return keys
    for name in (KEYS, INDEX_KEYS, TRANSACTION_ID):
        more = props.get(name)
        if more:
            keys.extend(k for k in more.split(KEY_SEPARATOR) if k and k not in keys)
    return keys


def raw_keys(props: bytes) -> list[str]:
    """``record_keys`` of encoded properties (``name \\x01 value \\x02`` …), found without decoding them all."""
    if not props:
        return []
    keys: list[str] = []
    for name in (b"UNIQ_KEY", b"KEYS", b"INDEX_KEYS", b"TRANSACTION_ID"):
        value = _raw_value(props, name)
        if value:
            keys.extend(k for k in value.decode().split(KEY_SEPARATOR) if k and k not in keys)
    return keys


def _raw_value(props: bytes, name: bytes) -> bytes | None:
    marker = b"\x02" + name + b"\x01"
    found = props.rfind(marker)  # the last one, as a dict keeps
    if found >= 0:
        begin = found + len(marker)
    elif props.startswith(name + b"\x01"):
        begin = len(name) + 1
    else:
        return None
    end = props.find(b"\x02", begin)
    return props[begin:] if end < 0 else props[begin:end]


class _IndexFile:
    def __init__(self, path: Path, slots: int, entries: int, begin_offset: int, begin_ms: int) -> None:
        self.path = path
        self.slots = slots
        self.capacity = entries
        size = _HEADER.size + slots * _SLOT.size + entries * _ENTRY.size
        fresh = not path.exists()
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self.fd).st_size != size:
            os.ftruncate(self.fd, size)  # sparse: blocks are allocated as entries land
        if fresh:
            _pwrite(self.fd, _HEADER.pack(begin_ms, begin_ms, begin_offset, begin_offset, 0, 0), 0)
        self.begin_ms, self.last_ms, self.begin_offset, self.upto, self.used, _ = _HEADER.unpack(os.pread(self.fd, _HEADER.size, 0))
        self._entries_at = _HEADER.size + slots * _SLOT.size
        # The header is written by the checkpoint; after a kill -9 the entries past its count are there all the same
        # (the page cache keeps them), and the slots point at them: count them, or new entries would overwrite them.
        while self.used < self.capacity and self._entry_bytes(self.used) != _EMPTY:
            self.used += 1

    def _entry_bytes(self, index: int) -> bytes:
        at = self._entries_at + index * _ENTRY.size
        return os.pread(self.fd, _ENTRY.size, at)

    @property
    def full(self) -> bool:
        return self.used >= self.capacity

    def add(self, h: int, offset: int, store_ms: int) -> None:
        slot_at = _HEADER.size + (h % self.slots) * _SLOT.size
        prev = _SLOT.unpack(os.pread(self.fd, _SLOT.size, slot_at))[0]
        self.used += 1
        seconds = max(0, (store_ms - self.begin_ms) // 1000)
        _pwrite(self.fd, _ENTRY.pack(h, offset, seconds, prev), self._entries_at + (self.used - 1) * _ENTRY.size)
        _pwrite(self.fd, _SLOT.pack(self.used), slot_at)
        self.last_ms = max(self.last_ms, store_ms)

    def seal(self, upto: int) -> None:
        self.upto = upto
        _pwrite(self.fd, _HEADER.pack(self.begin_ms, self.last_ms, self.begin_offset, upto, self.used, 0), 0)

    def hits(self, h: int, since_ms: int, until_ms: int) -> Iterator[int]:
        """Commit-log offsets of the entries with hash ``h`` stored within [since_ms - 1 s, until_ms], newest first."""
        entry = _SLOT.unpack(os.pread(self.fd, _SLOT.size, _HEADER.size + (h % self.slots) * _SLOT.size))[0]
        walked = 0
        while 0 < entry <= self.capacity and walked < MAX_WALK:
            walked += 1
            eh, offset, seconds, prev = _ENTRY.unpack(os.pread(self.fd, _ENTRY.size, self._entries_at + (entry - 1) * _ENTRY.size))
            at_ms = self.begin_ms + seconds * 1000
            if at_ms + 1000 < since_ms:
                return  # older from here on
            if eh == h and at_ms <= until_ms:
                yield offset
            entry = prev if prev < entry else 0  # a chain only goes back (a torn file cannot loop it)


class KeyIndex:
    """The index files of a store; ``add`` runs under the store's write lock, ``query`` from any thread."""

    def __init__(self, root: Path, slots: int, entries: int, read_at: Callable[[int], StoredMessage]) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self._root = root
        self._slots = slots
        self._entries = entries
        self._read_at = read_at
        self._roll_lock = threading.Lock()
        self._files = [_IndexFile(p, slots, entries, int(p.name), 0) for p in sorted(root.iterdir(), key=_by_offset)
                       if p.name.isdigit()]
        self.upto = self._files[-1].upto if self._files else 0
        self.refused: OSError | None = None  # a write the disk refused: nothing more is indexed until the next start
        self.durable_upto = self.upto  # what the last whole flush made durable

    def rewind(self, upto: int) -> None:
        """Index again from ``upto`` (the checkpoint's ``index_upto``; a tail cut): what lies past it may be lost or cut."""
        self.upto = min(self.upto, upto)

    def add(self, props: dict[str, str], offset: int, size: int, store_ms: int) -> None:
        """Index a record of the log (``put``, the recovery scan): each of its keys, once."""
        if offset >= self.upto:
            self.add_keys(record_keys(props), offset, size, store_ms)

    def add_results(self, results: Iterable[PutResult], store_ms: int) -> None:
        """Index what ``put`` just wrote (under its write lock)."""
        for r in results:
            if r.commit_log_offset >= self.upto:
                self.add_keys(record_keys(r.properties), r.commit_log_offset, r.size, store_ms)

    def add_keys(self, keys: Iterable[str], offset: int, size: int, store_ms: int) -> None:
        if offset < self.upto or self.refused is not None:
            return
        try:
            for key in keys:
                self._file_for(offset, store_ms).add(key_hash(key), offset, store_ms)
        except OSError as refused:  # a full or failing disk: the record is in the log; only its index entries wait
            self.refused = refused
            log.error("the key index stopped at log offset %d: %s; the next start indexes the log again from there", offset, refused)
            return
        self.upto = offset + size

    def _file_for(self, offset: int, store_ms: int) -> _IndexFile:
        if self._files and not self._files[-1].full:
            return self._files[-1]
        if self._files:
            self._files[-1].seal(self.upto)
        new = _IndexFile(self._root / f"{offset:020d}", self._slots, self._entries, offset, store_ms)
        with self._roll_lock:
            self._files = [*self._files, new]
        return new

    def flush(self) -> int:
        """Make the entries durable (the checkpoint's thread); return ``upto``, where the next recovery resumes."""
        files = self._files
        if not files:
            return self.upto
        upto = self.upto
        try:
            files[-1].seal(upto)
            for f in files[-2:]:
                os.fsync(f.fd)
        except OSError as refused:  # the checkpoint records the last upto that reached the disk whole
            self.refused = self.refused or refused
            log.error("the key index's checkpoint failed: %s; the next start indexes the log again from %d", refused, self.durable_upto)
            return self.durable_upto
        self.durable_upto = upto
        return upto

    def query(self, key: str, since_ms: int = 0, until_ms: int = 1 << 62, limit: int = 64) -> list[StoredMessage]:
        """The records carrying ``key`` stored within [since_ms, until_ms], newest first, at most ``limit``."""
        h = key_hash(key)
        found: list[StoredMessage] = []
        seen: set[int] = set()
        for f in reversed(self._files):
            if f.last_ms + 1000 < since_ms or len(found) >= limit:
                break
            for offset in f.hits(h, since_ms, until_ms):
                if len(found) >= limit:
                    break
                if offset in seen:
                    continue
                seen.add(offset)
                try:
                    rec = self._read_at(offset)
                except Exception:  # an entry of a cut tail, or damage: the log says no  # noqa: BLE001
                    continue
                if since_ms <= rec.store_timestamp <= until_ms and key in record_keys(rec.properties):
                    found.append(rec)
        found.sort(key=lambda r: r.commit_log_offset, reverse=True)
        return found[:limit]

    def close(self) -> None:
        for f in self._files:
            os.close(f.fd)


def _by_offset(p: Path) -> int:
    return int(p.name) if p.name.isdigit() else -1
