"""The state snapshot: everything a replay of HALFMQ_TXN_STATE rebuilds, as of one entry N, so a restart reads only the rest.

Without it, a restart (or a broker set's new leader) reads every record of the queue from its first entry: every
numbered send, producer id, transaction, registration and topic, for ever (producer_transactions.replay). With it,
the replay starts from what the snapshot holds and reads the records from entry N on: a restart costs what changed
since the last snapshot, not the broker's history (Kafka's producer-state snapshots). What it holds:

- ``settled``: per group and queue, the committed offset and the offsets settled past the gap above it (what the
  ``acks`` and ``offsets-reset`` records and the commit records before N settled; this module was the acks
  checkpoint, which held only these);
- ``state``: what the layers above keep (``producer_transactions.snapshot_state``: idempotent producers and their
  windows as kept in memory, transactional ids, registrations, topics, the receipt key), opaque here.

The acks checkpoint's rules carry over. It is taken on the event loop between two requests (a request writes its
records and changes the state in one step), so it holds exactly what the records before N built, plus what was
settled without a record (DLQ moves, skipped damage), which the offsets file keeps too. It is written only once the
whole log as it was when taken is acknowledged (fsynced on one broker, under a set's high watermark), so no cut of a
divergent tail can remove a record it counts; and a replay uses it only if its last entry still ends where it ended.

A file per node (docs/decisions/051-state-snapshots.md): a header line (magic, CRC-32 and length of the body, and the
entry numbers, readable without the body) and a JSON body. The one written before it is kept as ``PREVIOUS``: a
damaged newest falls back to it (a longer tail), and one neither file can serve falls back to a scan from the
first entry, never to wrong state. What the oldest usable snapshot needs is ``replay_start_offset``: retention keeps
the log from there.
"""

from __future__ import annotations

import logging
import os
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson

from .atomic_file import write_whole
from .record import StoredMessage
from .topics import TXN_STATE_TOPIC

if TYPE_CHECKING:
    from .message_store import MessageStore

log = logging.getLogger(__name__)

FILE = "state-snapshot.json"
PREVIOUS = "state-snapshot.previous.json"  # the one before: what a damaged newest falls back to
OLD_FILE = "acks-checkpoint.json"  # an older broker's acks checkpoint: no longer read, removed by the first snapshot
MAGIC = b"HALFMQ-STATE-SNAPSHOT-1"


class QueueSettled(NamedTuple):
    group: str
    topic: str
    queue_id: int
    committed: int  # every offset below it is settled
    past_gap: tuple[int, ...]  # settled above it


@dataclass(frozen=True)
class StateSnapshot:
    entries: int  # HALFMQ_TXN_STATE's queue offsets below it are counted (a replay reads from it)
    entry_start: int  # where the last counted entry starts in the commit log (what ``load`` reads back; 0: none)
    entry_end: int  # where it ends (0: none)
    log_end: int  # the log's end when taken: written once that is acknowledged
    settled: tuple[QueueSettled, ...]
    state: Any = None  # the layers above's (producer_transactions.snapshot_state): JSON, or tuples of it

    def due(self, acknowledged: int) -> bool:
        """Whether it may be written: everything it counts is acknowledged (no cut of a divergent tail can reach it)."""
        return self.log_end <= acknowledged


class Header(NamedTuple):
    crc: int
    length: int
    entries: int
    entry_start: int
    entry_end: int
    log_end: int


def path_of(store: MessageStore) -> Path:
    return Path(store.config.data_dir) / FILE


def take(store: MessageStore, settled: Iterable[tuple[str, str, int, int, tuple[int, ...]]], state: Any = None) -> StateSnapshot:
    """The snapshot of what ``settled`` (``QueueSettled`` rows) and ``state`` say now: on the writer's loop, between two
    requests. ``state`` must not change after this (copies): it is written later, in a thread."""
    entries = store.reads.queue_range(TXN_STATE_TOPIC, 0)[1]
    start, end = _entry(store, entries - 1)
    return StateSnapshot(entries, start, end, store.commit_log.end_offset, tuple(QueueSettled(*q) for q in settled), state)


def _entry(store: MessageStore, queue_offset: int) -> tuple[int, int]:
    """Where one entry of the queue starts and ends in the commit log; (0, 0) for none, (-1, -1) if it is not there."""
    if queue_offset < 0:
        return 0, 0
    found = store.reads.read_queue(TXN_STATE_TOPIC, 0, queue_offset, 1)
    return (found[0].commit_log_offset, found[0].commit_log_offset + found[0].size) if found else (-1, -1)


def save(path: Path, snapshot: StateSnapshot) -> None:
    """Write ``snapshot`` whole (temp file, fsync, rename); the one it replaces is kept as ``PREVIOUS``."""
    body = orjson.dumps({"settled": [list(q) for q in snapshot.settled], "state": snapshot.state}, default=_plain)
    header = b" ".join([MAGIC, b"%08x" % zlib.crc32(body), *(str(n).encode() for n in (
        len(body), snapshot.entries, snapshot.entry_start, snapshot.entry_end, snapshot.log_end))])
    if path.exists():
        os.replace(path, path.with_name(PREVIOUS))  # a crash before the write below leaves the previous one: still valid
    write_whole(path, [header, b"\n", body])
    path.with_name(OLD_FILE).unlink(missing_ok=True)


def _plain(value: Any) -> Any:
    """What orjson does not write itself: tuple subclasses (NamedTuples) as lists."""
    if isinstance(value, tuple):
        return list(value)
    raise TypeError(type(value).__name__)


class Unusable(Exception):
    """A snapshot file a replay must not use (damaged, or counting what this log does not hold); the reason is the text."""


def load(store: MessageStore) -> StateSnapshot | None:
    """The newest usable snapshot of the data dir (the newest file, else the previous one); None: replay from the start.

    Usable: intact (magic, length and CRC of its body), and this log still holds what it counts (its last entry is
    there and ends where it ended). Anything else is said in the log and passed over, never used.
    """
    for name in (FILE, PREVIOUS):
        path = Path(store.config.data_dir) / name
        try:
            return read(store, path)
        except FileNotFoundError:
            continue
        except Unusable as why:
            log.warning("state snapshot %s not used (%s): the replay reads more of the log", path, why)
    return None


def read(store: MessageStore, path: Path) -> StateSnapshot:
    """The snapshot in ``path`` if it is intact and this log holds what it counts (Unusable otherwise)."""
    data = path.read_bytes()
    head, _, body = data.partition(b"\n")
    header = _header(head)
    if len(body) != header.length or zlib.crc32(body) != header.crc:
        raise Unusable(f"its body is {len(body)} bytes of CRC {zlib.crc32(body):08x}, not {header.length} of {header.crc:08x}")
    try:
        raw = orjson.loads(body)
        settled = tuple(QueueSettled(str(g), str(t), int(q), int(c), tuple(int(o) for o in past)) for g, t, q, c, past in raw["settled"])
    except (ValueError, KeyError, TypeError) as exc:
        raise Unusable(f"{type(exc).__name__}: {exc}") from None
    _check_counted(store, header)
    return StateSnapshot(header.entries, header.entry_start, header.entry_end, header.log_end, settled, raw.get("state"))


def _header(head: bytes) -> Header:
    parts = head.split(b" ")
    if len(parts) != 7 or parts[0] != MAGIC:
        raise Unusable("no snapshot header")
    try:
        return Header(int(parts[1], 16), *(int(p) for p in parts[2:]))
    except ValueError:
        raise Unusable("a damaged header") from None


def _check_counted(store: MessageStore, header: Header) -> None:
    ends = store.reads.queue_range(TXN_STATE_TOPIC, 0)[1]
    if header.entries > ends:
        raise Unusable(f"it counts {header.entries} entries of {TXN_STATE_TOPIC}, the log holds {ends}")
    if _entry(store, header.entries - 1) != (header.entry_start, header.entry_end):
        raise Unusable(f"entry {header.entries - 1} of {TXN_STATE_TOPIC} is no longer the one it counted")


def counts_this_log(store: MessageStore, header: Header) -> bool:
    """Whether ``store``'s log holds what a snapshot with ``header`` counts (its last entry, where it was)."""
    try:
        _check_counted(store, header)
    except Unusable:
        return False
    return True


def replay_start_offset(store: MessageStore) -> int:
    """The commit-log offset from which a restart needs the log: where the oldest usable snapshot's last counted entry
    starts (a replay reads it back to check the snapshot still applies, then the entries after it), 0 without one.

    What retention keeps (state records below it are compactable): the oldest of the two files, so a damaged newest
    can still fall back to the previous one. Reads the files' header lines only.
    """
    starts = []
    for name in (FILE, PREVIOUS):
        try:
            with open(Path(store.config.data_dir) / name, "rb") as fh:
                header = _header(fh.readline().rstrip(b"\n"))
            _check_counted(store, header)
        except (OSError, Unusable):
            continue
        starts.append(header.entry_start)
    return min(starts, default=0)


def header_of(path: Path) -> Header:
    """The file's header line (Unusable when it has none); OSError when it cannot be read."""
    with open(path, "rb") as fh:
        return _header(fh.readline(200).rstrip(b"\n"))


def read_part(root: Path, entries: int | None, offset: int, size: int) -> tuple[bytes, int, int]:
    """Up to ``size`` bytes from ``offset`` of the data dir's newest snapshot file, or of the one counting ``entries``
    (a follower taking it part by part, while a new one may replace it): (bytes, the file's size, its entries).
    FileNotFoundError when no file is that one."""
    for name in (FILE, PREVIOUS):
        path = root / name
        try:
            with open(path, "rb") as fh:
                header = _header(fh.readline(200).rstrip(b"\n"))
                if entries is not None and header.entries != entries:
                    continue
                whole = os.fstat(fh.fileno()).st_size
                if offset >= whole:  # past the end (a follower asking which snapshot is the newest): no bytes
                    return b"", whole, header.entries
                fh.seek(offset)
                return fh.read(size), whole, header.entries
        except (FileNotFoundError, Unusable):
            continue
    raise FileNotFoundError(f"no state snapshot counting {entries} entries" if entries is not None else "no state snapshot")


def check_whole(path: Path, chunk: int = 1 << 20) -> Header:
    """A snapshot file received from another node is whole: its header, its body's length and CRC (read ``chunk`` bytes
    at a time: memory does not grow with the file); Unusable otherwise. Whether a log holds what it counts is ``load``'s
    check, when a replay uses it."""
    with open(path, "rb") as fh:
        header = _header(fh.readline(200).rstrip(b"\n"))
        crc = length = 0
        while part := fh.read(chunk):
            crc = zlib.crc32(part, crc)
            length += len(part)
    if length != header.length or crc != header.crc:
        raise Unusable(f"its body is {length} bytes of CRC {crc:08x}, not {header.length} of {header.crc:08x}")
    return header


def install(root: Path, received: Path) -> None:
    """Make ``received`` (a leader's snapshot, ``check_whole``) the data dir's snapshot. The one it replaces is not kept:
    a follower takes it to delete below the leader's log start, which an older file of its own would need."""
    os.replace(received, root / FILE)
    (root / PREVIOUS).unlink(missing_ok=True)
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def committed(store: MessageStore) -> list[tuple[str, str, int, int]]:
    """The contiguous offsets of the data dir's snapshot (none without one): all a cut of the log's tail leaves of them."""
    snapshot = load(store)
    return [(q.group, q.topic, q.queue_id, q.committed) for q in snapshot.settled] if snapshot else []


def records(store: MessageStore, snapshot: StateSnapshot | None) -> Iterator[StoredMessage]:
    """Every intact record of HALFMQ_TXN_STATE the snapshot does not count, in order (all of them without one)."""
    yield from store.reads.intact_records(TXN_STATE_TOPIC, 0, snapshot.entries if snapshot else 0)
