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
Each file of format 2 has a filter of the hashes it holds (``KeyFilter``: a Bloom filter, ``filter_bits`` bits a key, kept
in memory; a sealed file's written beside it as ``index/<name>.filter`` and read on the first query that reaches it): a
query skips a file whose filter says the key is not there without opening it, so a rare key costs the files that may
hold it, not every file (0.48 ms each, cold). A file without one (older, or reopened while it was being filled) is
walked as before. A query walks a slot's chain newest first, then reads each hit and keeps only the records that carry the key in the
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
from .file_handles import FileHandles
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


FILTER_SUFFIX = ".filter"
_MIX = 0x9E3779B1  # Fibonacci hashing: the second probe's bits from the first's hash


class KeyFilter:
    """A Bloom filter of a file's scoped hashes: two probes in ``bits`` bits (a power of two, at least 64). At 8 bits a key
    about 5 % of the files without a key are walked anyway; the rest are skipped unopened."""

    def __init__(self, bits: int, data: bytearray | None = None) -> None:
        self.mask = bits - 1
        self.data = data if data is not None else bytearray(bits // 8)

    @classmethod
    def sized(cls, entries: int, bits_per_key: int) -> KeyFilter:
        return cls(max(64, 1 << max(entries * bits_per_key - 1, 1).bit_length()))

    def add(self, h: int) -> None:
        data, mask = self.data, self.mask
        a = h & mask
        b = ((h * _MIX) >> 7) & mask
        data[a >> 3] |= 1 << (a & 7)
        data[b >> 3] |= 1 << (b & 7)

    def may_hold(self, h: int) -> bool:
        data, mask = self.data, self.mask
        a = h & mask
        b = ((h * _MIX) >> 7) & mask
        return bool(data[a >> 3] & (1 << (a & 7))) and bool(data[b >> 3] & (1 << (b & 7)))


class _IndexFile:
    """One index file. The file being written keeps in memory its slot table (``table``, 4 bytes a slot) and the
    entries added since the last write (``pending``): a put only packs its entries and moves its slots, and the
    checkpoint writes the entries, then the changed slot pages (``write_out``). Why not a ``pwrite`` per put: on ext4 a
    write that allocates a block of this sparse file joins the journal transaction the commit log's next fsync must
    commit, and a sequential durable send lost ~10 % to it. A sealed file is read from disk."""

    def __init__(self, path: Path, slots: int, entries: int, begin_offset: int, begin_ms: int, handles: FileHandles,
                 filter_bits: int = 0) -> None:
        self.path = path
        self.slots = slots
        self.capacity = entries
        self._handles = handles  # reads go through the store's bounded table of descriptors
        self._filter_bits = filter_bits
        size = _HEADER.size + slots * _SLOT.size + entries * _ENTRY.size
        fresh = not path.exists()
        # A fresh file's filter is filled as entries land; a file found on disk reads its sidecar on first use (a
        # sealed one's), and one without (an older file, or the one being filled at the last stop) has none: walked.
        self.filter: KeyFilter | None = KeyFilter.sized(entries, filter_bits) if fresh and filter_bits else None
        self._filter_looked = fresh
        # The writer's descriptor: kept while this file is written, closed once it is sealed and fsynced (``retire``).
        self.fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
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
        with self._handles.use(self.path) as fd:
            return os.pread(fd, _ENTRY.size, at)

    def _writing(self) -> int:
        """The writer's descriptor (opened again for a file that was retired: an older one sealed as it is)."""
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR)
        return self.fd

    @property
    def filter_path(self) -> Path:
        return self.path.with_name(self.path.name + FILTER_SUFFIX)

    def may_hold(self, h: int) -> bool:
        """False when this file's filter says no entry has hash ``h`` (then it need not be opened); True otherwise."""
        if not self._filter_looked:
            self._filter_looked = True
            self.filter = self._read_filter()
        bloom = self.filter
        return bloom is None or bloom.may_hold(h)

    def _read_filter(self) -> KeyFilter | None:
        try:
            data = bytearray(self.filter_path.read_bytes())
        except OSError:
            return None
        bits = len(data) * 8
        if bits < 64 or bits & (bits - 1):
            return None  # not one this code wrote: walk the file
        return KeyFilter(bits, data)

    def write_filter(self) -> None:
        """Write the filter beside the sealed file (the checkpoint's thread), so a restart reads it instead of walking."""
        if self.filter is not None and self.format == FORMAT:
            write_whole(self.filter_path, bytes(self.filter.data))

    def retire(self) -> None:
        """Close the writer's descriptor: the file is sealed and fsynced (reads open it through the handles)."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def load_table(self) -> None:
        """Read the slot table into memory: this file is the one written from now on."""
        table = array("I")
        table.frombytes(os.pread(self._writing(), self.slots * _SLOT.size, _HEADER.size))
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
            bloom = self.filter
            for h, offset in entries:
                slot = h % slots
                if bloom is not None:
                    bloom.add(h)
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
                if _pwrite(self._writing(), data, self._entries_at + start * _ENTRY.size) != len(data):
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
                    _pwrite(self._writing(), pages[page], _HEADER.size + page * _SLOTS_PER_PAGE * _SLOT.size)
            except OSError:
                with self.lock:
                    self._dirty |= pages.keys()  # written again by the next checkpoint
                raise

    def seal(self, upto: int) -> None:
        self.write_out()
        self.upto = upto
        _pwrite(self._writing(), _HEADER.pack(self.begin_ms, self.last_ms, self.begin_offset, upto, self.used, self.format), 0)

    def _slot(self, h: int) -> int:
        table = self.table
        if table is not None:
            with self.lock:
                return table[h % self.slots]
        with self._handles.use(self.path) as fd:
            return _SLOT.unpack(os.pread(fd, _SLOT.size, _HEADER.size + (h % self.slots) * _SLOT.size))[0]

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

    def __init__(self, root: Path, slots: int, entries: int, read_at: Callable[[int], StoredMessage],
                 handles: FileHandles | None = None, filter_bits: int = 8) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self._root = root
        self._slots = slots
        self._entries = entries
        self._filter_bits = filter_bits  # bits a key of each file's filter (0: none, every file is walked)
        self._read_at = read_at
        self._handles = handles or FileHandles()
        self._roll_lock = threading.Lock()
        self._flushing = threading.Lock()  # held by a flush throughout: retention closes no descriptor it fsyncs
        self._rolled: list[_IndexFile] = []  # sealed since the last flush: fsynced by it, then their writers' descriptors go
        self._files = [_IndexFile(p, slots, entries, int(p.name), 0, self._handles)
                       for p in sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))]
        for f in self._files[:-1]:
            f.retire()  # sealed: read through the handles; only the last may be written
        self._secret = self._load_secret()
        self._tweaks: dict[str, int] = {}
        self.upto = self._files[-1].upto if self._files else 0
        self.refused: OSError | None = None  # a write the disk refused: nothing more is indexed until the next start
        self.durable_upto = self.upto  # what the last whole flush made durable

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
                f.retire()
                self._handles.forget(f.path)
                f.path.unlink()
                f.filter_path.unlink(missing_ok=True)
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
            self._rolled.append(old)
        new = _IndexFile(self._root / f"{offset:020d}", self._slots, self._entries, offset, store_ms, self._handles,
                         self._filter_bits)
        new.load_table()
        with self._roll_lock:
            self._files = [*self._files, new]
        return new

    def flush(self) -> int:
        """Make the entries and slots durable (the checkpoint's thread); return ``upto``, where the next recovery resumes."""
        with self._flushing:
            return self._flush()

    def _flush(self) -> int:
        upto = self.upto  # first: every slot of an entry below it is in a table (or a page) by now
        rolled, self._rolled = self._rolled, []  # first: each was sealed (written whole) before the last was added
        files = self._files
        if not files:
            return upto
        try:
            files[-1].seal(upto)
            for f in [*rolled, files[-1]]:
                if f.fd is not None:
                    os.fsync(f.fd)
            for f in rolled:
                if f is not files[-1]:
                    f.write_filter()
                    f.retire()  # sealed at its roll and fsynced just now: written no more
        except OSError as refused:
            self._rolled = rolled + self._rolled  # fsynced by the next checkpoint  # the checkpoint records the last upto that reached the disk whole
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
            if f.begin_ms > until_ms or (self._filter_bits and f.format == FORMAT and not f.may_hold(h)):
                continue  # (a file the filter rules out costs no walk)
            walked += 1
            try:
                for offset in f.hits(h if f.format == FORMAT else unscoped, since_ms, until_ms):
                    if offset not in seen:
                        seen.add(offset)
                        yield offset
            except FileNotFoundError:
                continue  # retention deleted the file since the walk began: its entries point below the log start

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
        """Delete the files whose every entry points below ``log_start`` (the next file begins at or before it), and
        their filters; the file being written stays. One sealed since the last flush leaves the flush's list, its
        writer's descriptor closed here (``_flushing``: between two flushes). Each file is unlinked, then forgotten by
        the handles: a query inside ``use`` keeps its descriptor until it lets go, one opening it later skips it
        (``candidates``)."""
        with self._flushing, self._roll_lock:
            files = self._files
            gone = 0
            while gone < len(files) - 1 and int(files[gone + 1].path.name) <= log_start:
                gone += 1
            if not gone:
                return []
            self._files = files[gone:]
            self._rolled = [f for f in self._rolled if f not in files[:gone]]
            for f in files[:gone]:
                f.retire()  # a file sealed since the last flush: its writer's descriptor (no flush is running)
        deleted: list[Path] = []
        for f in files[:gone]:
            f.path.unlink(missing_ok=True)
            self._handles.forget(f.path)
            deleted.append(f.path)
            try:
                f.filter_path.unlink()
                deleted.append(f.filter_path)
            except FileNotFoundError:
                pass  # a file of the older format, or sealed before filters: none beside it
        return deleted

    def close(self) -> None:
        for f in self._files:
            f.retire()
        self._handles.close()
