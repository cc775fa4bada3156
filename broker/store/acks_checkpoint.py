"""The acks checkpoint: what the ``acks`` records of HALFMQ_TXN_STATE before one entry settled, so a replay reads only later ones.

Without it, a restart (or a broker set's new leader) replays every ``acks`` record from the start of the
queue (producer_transactions.replay). With it, the replay starts from the settled offsets it keeps and
passes over every ``acks`` record before its entry unread: their consume-queue entries carry
``state_records.ACKS_TAG``'s hash. The queue's other records (producer ids, numbered sends, transactions,
topics, registrations, the receipt key) are still read from the start.

Replay from it gives what replay from 0 gives. Settling is a union (an offset settled stays settled, in any
order), and the checkpoint is taken on the event loop between two ack requests (an ack request writes its
record and settles in one step), so it holds every offset the records before its entry settled, plus what
was settled without a record of that queue (DLQ moves, skipped damage), which the offsets file keeps too.
It is written only once the whole log as it was when taken is acknowledged (fsynced on one broker, under a
set's high watermark), so no cut of a divergent tail can remove a record it counts; and a replay uses it
only if its last entry still ends where it ended.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .atomic_file import DamagedFile, read_json, write_json
from .record import StoredMessage, tag_hash
from .state_records import ACKS_TAG
from .topics import TXN_STATE_TOPIC

if TYPE_CHECKING:
    from .message_store import MessageStore

FILE = "acks-checkpoint.json"
ACKS_HASH = tag_hash(ACKS_TAG)


class QueueSettled(NamedTuple):
    group: str
    topic: str
    queue_id: int
    committed: int  # every offset below it is settled
    past_gap: tuple[int, ...]  # settled above it


@dataclass(frozen=True)
class AcksCheckpoint:
    entries: int  # HALFMQ_TXN_STATE's queue offsets below it are counted
    entry_end: int  # where the last counted entry ends in the commit log (0: none)
    log_end: int  # the log's end when taken: written once that is acknowledged
    settled: tuple[QueueSettled, ...]

    def due(self, acknowledged: int) -> bool:
        """Whether it may be written: everything it counts is acknowledged (no cut of a divergent tail can reach it)."""
        return self.log_end <= acknowledged


def path_of(store: MessageStore) -> Path:
    return Path(store.config.data_dir) / FILE


def take(store: MessageStore, settled: Iterable[tuple[str, str, int, int, tuple[int, ...]]]) -> AcksCheckpoint:
    """The checkpoint of what ``settled`` (``QueueSettled`` rows) says now: on the writer's loop, between two requests."""
    entries = store.reads.queue_range(TXN_STATE_TOPIC, 0)[1]
    return AcksCheckpoint(entries, _end_of_entry(store, entries - 1), store.commit_log.end_offset, tuple(QueueSettled(*q) for q in settled))


def _end_of_entry(store: MessageStore, queue_offset: int) -> int:
    if queue_offset < 0:
        return 0
    found = store.reads.read_queue(TXN_STATE_TOPIC, 0, queue_offset, 1)
    return found[0].commit_log_offset + found[0].size if found else -1


def save(path: Path, checkpoint: AcksCheckpoint) -> None:
    write_json(path, {"entries": checkpoint.entries, "entry_end": checkpoint.entry_end, "log_end": checkpoint.log_end,
                      "settled": [list(q) for q in checkpoint.settled]})


def load(store: MessageStore) -> AcksCheckpoint | None:
    """The data dir's checkpoint if this log still holds what it counts; None (replay from 0) otherwise."""
    try:
        checkpoint = read_json(path_of(store), None, _parse)
    except DamagedFile:
        return None
    if checkpoint is None or checkpoint.entries > store.reads.queue_range(TXN_STATE_TOPIC, 0)[1]:
        return None
    return checkpoint if _end_of_entry(store, checkpoint.entries - 1) == checkpoint.entry_end else None


def committed(store: MessageStore) -> list[tuple[str, str, int, int]]:
    """The contiguous offsets of the data dir's checkpoint (none without one): all a cut of the log's tail leaves of them."""
    checkpoint = load(store)
    return [(q.group, q.topic, q.queue_id, q.committed) for q in checkpoint.settled] if checkpoint else []


def _parse(raw: Any) -> AcksCheckpoint:
    settled = tuple(QueueSettled(str(g), str(t), int(q), int(c), tuple(int(o) for o in past)) for g, t, q, c, past in raw["settled"])
    return AcksCheckpoint(int(raw["entries"]), int(raw["entry_end"]), int(raw["log_end"]), settled)


def records(store: MessageStore, checkpoint: AcksCheckpoint | None, batch: int = 512) -> Iterator[StoredMessage]:
    """Every intact record of HALFMQ_TXN_STATE in order, but the ``acks`` records ``checkpoint`` counts (not read)."""
    offset, counted = 0, checkpoint.entries if checkpoint else 0
    while offset < counted:
        hashes = store.reads.tag_hashes(TXN_STATE_TOPIC, 0, offset, min(batch, counted - offset))
        if not hashes:
            break
        run = 0  # a run of records to read, ended by an ``acks`` record or the batch's end
        for i, h in enumerate([*hashes, ACKS_HASH]):
            if h != ACKS_HASH:
                run += 1
                continue
            if run:
                yield from store.reads.read_queue(TXN_STATE_TOPIC, 0, offset + i - run, run)
            run = 0
        offset += len(hashes)
    yield from store.reads.intact_records(TXN_STATE_TOPIC, 0, offset)
