"""The key index: find a record by its id or one of its keys without scanning the log (RocketMQ's IndexFile shape).

What is indexed, in which scope: ``indexed_keys``. As RocketMQ keys entries ``topic#key``, an entry's hash is
``crc32c(key)`` continued from its scope's 32-bit tweak, a BLAKE2s keyed with the store's secret (``index/secret``):
crc32c is linear, so unkeyed, a key of one topic could be made to land in any other's slot and crowd its chain.

Files ``index/<first commit-log offset>``, each a header, ``slots`` 4-byte hash slots and ``entries`` 20-byte entries::

    header  begin_ms i64 | last_ms i64 | begin_offset i64 | upto i64 | entries_used u32 | format u32   (40 bytes)
    slot    the 1-based number of the newest entry whose hash falls there (0: none)
    entry   scoped hash u32 | commit-log offset i64 | seconds since begin_ms u32 | previous entry u32

Format 2 is scoped; files of format 0 (older: ``crc32c(key)``) are read with that hash, scopes checked on the records
as always, and new entries go to a new file. Files it cannot hash for are deleted and indexed again (``_load_secret``).

A put adds its entries in memory under the store's write lock: the file being written keeps its slot table and its
newest entries there (``_IndexFile``), and the checkpoint writes the entries, then the changed slot pages, fsyncs and
records ``upto``; a kill -9 loses at most what was added since, and the next start indexes the log again from
``upto`` (two pwrites per key had cost a batched put two thirds of its rate). Entries are read with ``pread``. No mmap: touching
a hole of a sparse file through one on a full disk (tmpfs allocates even on a read) kills the process with SIGBUS (the
queue checker's full-disk fault did), where ``pwrite`` answers ENOSPC and ``pread`` of a hole reads zeros. A refused
write stops the index where it is (logged); the next start indexes the log again from there, and the broker goes on.
A query walks a slot's chain newest first, then reads each hit and keeps only the records that carry the key in the
scope: two keys with one hash, a duplicate entry left by a replay, or an entry of a tail cut since, are told apart there.
"""

from __future__ import annotations

import errno
import logging
import os
import struct
import sys
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator
from hashlib import blake2s
from pathlib import Path

import crc32c

from .atomic_file import write_whole
from .indexed_keys import TRANSACTION_ID, TXN_SCOPE, UNIQ_KEY, index_keys, record_keys
from .record import StoredMessage
from .store_types import PutResult
from .topics import REAL_TOPIC

FORMAT = 2  # the header's format: 2 scopes hashes under the store's secret
UNSCOPED = 0  # the format before issue 42: crc32c(key), read as it is (new entries never join such a file)
SECRET = "secret"  # the file in the index directory holding the secret the scopes' tweaks are keyed with
_SECRET_BYTES = 32  # BLAKE2s's longest key
_MAX_TWEAKS = 65_536  # scopes whose tweak is remembered (one per topic); past it the memo starts again

_HEADER = struct.Struct("<qqqqII")
_SLOT = struct.Struct("<I")
_ENTRY = struct.Struct("<IqII")
_EMPTY = bytes(_ENTRY.size)
_SLOTS_PER_PAGE = 4096 // _SLOT.size
_PENDING_LIMIT = 1 << 20  # bytes of entries kept in memory before a put writes them (the checkpoint writes them first)
_PAGE_SHIFT = _SLOTS_PER_PAGE.bit_length() - 1  # slot >> it: the slot's page of the table
_pwrite = os.pwrite  # (the one door to the disk for index writes: a test makes it refuse, as a full disk does)
log = logging.getLogger(__name__)
MAX_WALK = 4096  # entries a query follows in one file's chain before it stops (a bounded cost)
_crc32c = crc32c.crc32c


class _IndexFile:
    """One index file. The file being written keeps in memory its slot table (``table``, 4 bytes a slot) and the
    entries added since the last write (``pending``): a put only packs its entries and moves its slots, and the
    checkpoint writes the entries, then the changed slot pages (``write_out``). Why not a ``pwrite`` per put: on ext4 a
    write that allocates a block of this sparse file joins the journal transaction the commit log's next fsync must
    commit, and a sequential durable send lost ~10 % to it. A sealed file is read from disk."""

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
            _pwrite(self.fd, _HEADER.pack(begin_ms, begin_ms, begin_offset, begin_offset, 0, FORMAT), 0)
        self.begin_ms, self.last_ms, self.begin_offset, self.upto, self.used, self.format = _HEADER.unpack(os.pread(self.fd, _HEADER.size, 0))
        self._entries_at = _HEADER.size + slots * _SLOT.size
        self.table: array[int] | None = None
        self._dirty: set[int] = set()  # pages of the table changed since ``write_out``
        self.lock = threading.Lock()  # the table, ``pending`` and ``written`` change together under it
        self.writing = threading.Lock()  # one write_out at a time
        # The header is written by the checkpoint; after a kill -9 the entries past its count are there all the same
        # (the page cache keeps them): count them, so new entries go after them and no chain on disk is overwritten.
        while self.used < self.capacity and self._entry_bytes(self.used) != _EMPTY:
            self.used += 1
        self.written = self.used  # entries in the file; those past it are in ``pending``
        self.pending = bytearray()

    def _entry_bytes(self, index: int) -> bytes:
        at = self._entries_at + index * _ENTRY.size
        return os.pread(self.fd, _ENTRY.size, at)

    def load_table(self) -> None:
        """Read the slot table into memory: this file is the one written from now on."""
        table = array("I")
        table.frombytes(os.pread(self.fd, self.slots * _SLOT.size, _HEADER.size))
        if sys.byteorder != "little":
            table.byteswap()
        self.table = table

    @property
    def room(self) -> int:
        return self.capacity - self.used

    def add(self, entries: list[tuple[int, int]], store_ms: int) -> None:
        """Add ``(hash, log offset)`` entries stored at ``store_ms`` (at most ``room``), in memory."""
        table = self.table
        assert table is not None, "only the file being written takes entries"
        slots = self.slots
        pack_into = _ENTRY.pack_into
        seconds = max(0, (store_ms - self.begin_ms) // 1000)
        with self.lock:
            pending = self.pending
            at = len(pending)
            pending.extend(bytes(len(entries) * _ENTRY.size))
            number = self.used
            dirty = self._dirty
            for h, offset in entries:
                slot = h % slots
                pack_into(pending, at, h, offset, seconds, table[slot])
                number += 1
                at += _ENTRY.size
                table[slot] = number
                dirty.add(slot >> _PAGE_SHIFT)
            self.used = number
        self.last_ms = max(self.last_ms, store_ms)

    def write_out(self) -> None:
        """Write the pending entries, then the changed slot pages (a slot on disk names entries on disk). One at a time: a
        put and the checkpoint both call it, and two at once each cut what they wrote from ``pending`` (entries lost)."""
        with self.writing:
            with self.lock:
                data = bytes(self.pending)
                start = self.written
            if data:
                if _pwrite(self.fd, data, self._entries_at + start * _ENTRY.size) != len(data):
                    raise OSError(errno.ENOSPC, "a short write of the key index")
                with self.lock:
                    del self.pending[:len(data)]
                    self.written = start + len(data) // _ENTRY.size
            table = self.table
            with self.lock:  # the pages as whole puts left them
                dirty, self._dirty = self._dirty, set()
                pages = {page: table[page * _SLOTS_PER_PAGE:(page + 1) * _SLOTS_PER_PAGE].tobytes() for page in dirty} if table else {}
            try:
                for page in sorted(pages):
                    _pwrite(self.fd, pages[page], _HEADER.size + page * _SLOTS_PER_PAGE * _SLOT.size)
            except OSError:
                with self.lock:
                    self._dirty |= pages.keys()  # written again by the next checkpoint
                raise

    def seal(self, upto: int) -> None:
        self.write_out()
        self.upto = upto
        _pwrite(self.fd, _HEADER.pack(self.begin_ms, self.last_ms, self.begin_offset, upto, self.used, self.format), 0)

    def _slot(self, h: int) -> int:
        table = self.table
        if table is not None:
            with self.lock:
                return table[h % self.slots]
        return _SLOT.unpack(os.pread(self.fd, _SLOT.size, _HEADER.size + (h % self.slots) * _SLOT.size))[0]

    def _entry(self, number: int) -> tuple[int, int, int, int]:
        index = number - 1
        with self.lock:
            if index >= self.written:
                return _ENTRY.unpack_from(self.pending, (index - self.written) * _ENTRY.size)  # type: ignore[return-value]
        return _ENTRY.unpack(self._entry_bytes(index))  # type: ignore[return-value]

    def hits(self, h: int, since_ms: int, until_ms: int) -> Iterator[int]:
        """Commit-log offsets of the entries with hash ``h`` stored within [since_ms - 1 s, until_ms], newest first."""
        entry = self._slot(h)
        walked = 0
        while 0 < entry <= self.capacity and walked < MAX_WALK:
            walked += 1
            eh, offset, seconds, prev = self._entry(entry)
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
        self._files = [_IndexFile(p, slots, entries, int(p.name), 0)
                       for p in sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))]
        self._secret = self._load_secret()
        self._tweaks: dict[str, int] = {}
        self.upto = self._files[-1].upto if self._files else 0
        self.refused: OSError | None = None  # a write the disk refused: nothing more is indexed until the next start
        self.durable_upto = self.upto  # what the last whole flush made durable
        self._retired: list[int] = []  # descriptors of files retention deleted, closed at its next pass

    def _load_secret(self) -> bytes:
        """This store's secret (made when there is none). Files of format 2 without it, or of a format this code does not
        know, are deleted from the first on: the index is derived, and recovery indexes the log again from there."""
        path = self._root / SECRET
        secret = path.read_bytes() if path.exists() else b""  # of another length: none
        known = (UNSCOPED, FORMAT) if len(secret) == _SECRET_BYTES else (UNSCOPED,)
        first = next((i for i, f in enumerate(self._files) if f.format not in known), len(self._files))
        if first < len(self._files):
            log.warning("the key index in %s: %d file(s) cannot be read (their secret is gone, or a newer format): "
                        "indexing the log again from where the others end", self._root, len(self._files) - first)
            for f in self._files[first:]:
                os.close(f.fd)
                f.path.unlink()
            del self._files[first:]
        if len(secret) != _SECRET_BYTES:
            secret = os.urandom(_SECRET_BYTES)
            write_whole(path, secret)
        return secret

    def _tweak(self, scope: str) -> int:
        """The scope's 32-bit tweak: where its keys' hashes start (a keyed BLAKE2s, memoised)."""
        tweak = self._tweaks.get(scope)
        if tweak is None:
            tweak = int.from_bytes(blake2s(scope.encode(), digest_size=4, key=self._secret).digest(), "little")
            if len(self._tweaks) >= _MAX_TWEAKS:
                self._tweaks = {}
            self._tweaks[scope] = tweak
        return tweak

    def scoped_hash(self, scope: str, key: str) -> int:
        """The hash of ``key`` in ``scope``: crc32c continued from the scope's tweak."""
        return _crc32c(key.encode(), self._tweak(scope))

    def rewind(self, upto: int) -> None:
        """Index again from ``upto`` (the checkpoint's ``index_upto``; a tail cut): what lies past it may be lost or cut."""
        self.upto = min(self.upto, upto)

    def add(self, topic: str, props: dict[str, str], offset: int, size: int, store_ms: int) -> None:
        """Index a record of the log (the recovery scan): each of its keys, once, in its scope."""
        if offset >= self.upto:
            self._write([(self.scoped_hash(scope, key), offset) for scope, key in index_keys(topic, props)], store_ms, offset + size)

    def add_results(self, results: Iterable[PutResult], store_ms: int) -> None:
        """Index what ``put`` just wrote (under its write lock): one loop, the common message (only its UNIQ_KEY)
        without a call but its topic's tweak, once per topic the put reaches."""
        upto = end = self.upto
        entries: list[tuple[int, int]] = []
        topic = ""
        tweak = 0
        for r in results:
            offset = r.commit_log_offset
            if offset < upto:
                continue
            props = r.properties
            uniq = props.get(UNIQ_KEY)
            if uniq is not None and len(props) == 1:
                if r.topic != topic:
                    topic = r.topic
                    tweak = self._tweak(topic)
                entries.append((_crc32c(uniq.encode(), tweak), offset))
            else:  # index_keys, inline: its keys in one scope, then its transaction id
                home = props.get(REAL_TOPIC) or r.topic
                if home != topic:
                    topic = home
                    tweak = self._tweak(topic)
                entries.extend((_crc32c(key.encode(), tweak), offset) for key in record_keys(props))
                txid = props.get(TRANSACTION_ID)
                if txid:
                    entries.append((_crc32c(txid.encode(), self._tweak(TXN_SCOPE)), offset))
            end = offset + r.size
        if end > upto:
            self._write(entries, store_ms, end)

    def add_records(self, records: list[tuple[list[tuple[str, str]], int, int, int]]) -> None:
        """Index ``(index keys, log offset, size, store_ms)`` records in log order (a follower's replicated run)."""
        run: list[tuple[int, int]] = []
        for i, (keys, offset, size, store_ms) in enumerate(records):
            if offset < self.upto:
                continue
            run.extend((self.scoped_hash(scope, key), offset) for scope, key in keys)
            if i + 1 == len(records) or records[i + 1][3] != store_ms:  # one write per store time (a leader's put)
                self._write(run, store_ms, offset + size)
                run = []

    def _write(self, entries: list[tuple[int, int]], store_ms: int, end: int) -> None:
        """Add ``entries`` (one write per index file they reach); then the log up to ``end`` is indexed."""
        if self.refused is not None:
            return
        try:
            while entries:
                f = self._file_for(entries[0][1], store_ms)
                take = f.room
                f.add(entries if take >= len(entries) else entries[:take], store_ms)
                if len(f.pending) >= _PENDING_LIMIT:  # bounded: a long checkpoint interval writes here
                    f.write_out()
                entries = entries[take:]
        except OSError as refused:  # a full or failing disk: the records are in the log; only their index entries wait
            self.refused = refused
            log.error("the key index stopped at log offset %d: %s; the next start indexes the log again from there", self.upto, refused)
            return
        self.upto = end

    def _file_for(self, offset: int, store_ms: int) -> _IndexFile:
        if self._files and self._files[-1].room and self._files[-1].format == FORMAT:  # an older file is sealed as it is
            current = self._files[-1]
            if current.table is None:
                current.load_table()
            return current
        if self._files:
            old = self._files[-1]
            old.seal(self.upto)
            old.table = None  # sealed: read from disk from now on
        new = _IndexFile(self._root / f"{offset:020d}", self._slots, self._entries, offset, store_ms)
        new.load_table()
        with self._roll_lock:
            self._files = [*self._files, new]
        return new

    def flush(self) -> int:
        """Make the entries and slots durable (the checkpoint's thread); return ``upto``, where the next recovery resumes."""
        upto = self.upto  # first: every slot of an entry below it is in a table (or a page) by now
        files = self._files
        if not files:
            return upto
        try:
            for f in files[-2:-1]:  # the one before the last (a roll just now); seal writes the last
                f.write_out()
            files[-1].seal(upto)
            for f in files[-2:]:
                os.fsync(f.fd)
        except OSError as refused:  # the checkpoint records the last upto that reached the disk whole
            self.refused = self.refused or refused
            log.error("the key index's checkpoint failed: %s; the next start indexes the log again from %d", refused, self.durable_upto)
            return self.durable_upto
        self.durable_upto = upto
        return upto

    def candidates(self, scope: str, key: str, since_ms: int = 0, until_ms: int = 1 << 62,
                   max_files: int | None = None) -> Iterator[int]:
        """The log offsets of the entries of ``key`` in ``scope`` stored within [since_ms, until_ms], newest first, each
        once; no record is read (``record`` tells a real one). At most ``max_files`` files are walked (those outside the
        time range are skipped without counting), each at most ``MAX_WALK`` entries."""
        h = self.scoped_hash(scope, key)
        unscoped = _crc32c(key.encode())
        seen: set[int] = set()
        walked = 0
        for f in reversed(self._files):
            if f.last_ms + 1000 < since_ms or (max_files is not None and walked >= max_files):
                return
            if f.begin_ms > until_ms:
                continue
            walked += 1
            for offset in f.hits(h if f.format == FORMAT else unscoped, since_ms, until_ms):
                if offset not in seen:
                    seen.add(offset)
                    yield offset

    def record(self, scope: str, key: str, offset: int, since_ms: int = 0, until_ms: int = 1 << 62) -> StoredMessage | None:
        """The record at ``offset`` when it carries ``key`` in ``scope`` and was stored within the range; None for
        another key with the same hash, an entry of a tail cut since, or damage (the log says no)."""
        try:
            rec = self._read_at(offset)
        except Exception:  # noqa: BLE001
            return None
        if since_ms <= rec.store_timestamp <= until_ms and (scope, key) in index_keys(rec.topic, rec.properties):
            return rec
        return None

    def query(self, scope: str, key: str, since_ms: int = 0, until_ms: int = 1 << 62, limit: int = 64,
              max_files: int | None = None) -> list[StoredMessage]:
        """The records carrying ``key`` in ``scope`` stored within [since_ms, until_ms], newest first, at most ``limit``."""
        found: list[StoredMessage] = []
        for offset in self.candidates(scope, key, since_ms, until_ms, max_files):
            if len(found) >= limit:
                break
            rec = self.record(scope, key, offset, since_ms, until_ms)
            if rec is not None:
                found.append(rec)
        found.sort(key=lambda r: r.commit_log_offset, reverse=True)
        return found

    def forget_below(self, log_start: int) -> list[Path]:
        """Delete the files whose every entry points below ``log_start`` (the next file begins at or before it); the
        file being written stays. A query may still walk a file deleted now: its descriptor closes at the next call."""
        retired, self._retired = self._retired, []
        for fd in retired:
            os.close(fd)
        with self._roll_lock:
            files = self._files
            gone = 0
            while gone < len(files) - 1 and int(files[gone + 1].path.name) <= log_start:
                gone += 1
            if not gone:
                return []
            self._files = files[gone:]
        for f in files[:gone]:
            f.path.unlink(missing_ok=True)
            self._retired.append(f.fd)
        return [f.path for f in files[:gone]]

    def close(self) -> None:
        for fd in self._retired:
            os.close(fd)
        self._retired = []
        for f in self._files:
            os.close(f.fd)
