"""Fill a broker data dir fast by writing with ``MessageStore`` directly, before the broker starts.

Pre-filling a topic over HTTP would take longer than the measurement it
prepares (1 GiB for the recovery scenario). Writing through the store itself
produces exactly the records, consume queues, topic table and checkpoint a
broker would have written, in the same format, as fast as Python can encode
them. Only one process may own a data dir, so this runs before the broker.
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import crc32c

from halfmq.broker.delivery.fifo_gate import MESSAGE_GROUP
from halfmq.broker.store.message_store import MessageStore, PutItem, StoreConfig


@dataclass(frozen=True)
class FillResult:
    messages: int
    bytes: int
    seconds: float

    def as_json(self) -> dict:
        return {"messages": self.messages, "commit_log_bytes": self.bytes, "fill_seconds": round(self.seconds, 2),
                "fill_mib_per_s": round(self.bytes / 2**20 / self.seconds, 1) if self.seconds else None}


def fill(data_dir: Path, topic: str, queues: int, *, messages: int | None = None, target_bytes: int | None = None,
         body_size: int = 256, batch: int = 1000, groups: int | None = None) -> FillResult:
    """Append 256-byte messages round-robin over ``queues`` until ``messages`` or ``target_bytes`` is reached; with
    ``groups``, in message groups g0, g1, … round robin, each in its queue (crc32c of its name, as a send puts it)."""
    if messages is None and target_bytes is None:
        raise ValueError("give messages or target_bytes")
    body = (b"halfmq-bench-fill:" + b"x" * body_size)[:body_size]
    prefix = os.urandom(6).hex().upper()
    counter = itertools.count()

    def batches(store: MessageStore, born: int) -> Iterator[list[PutItem]]:
        written = 0
        while True:
            n = batch if messages is None else min(batch, messages - written)
            if n <= 0 or (target_bytes is not None and store.commit_log.end_offset >= target_bytes):
                return
            yield [_item(topic, queues, written + i, body, f"{prefix}{next(counter):012X}", born, groups) for i in range(n)]
            written += n

    return _write(data_dir, topic, queues, batches)


def fill_bodies(data_dir: Path, topic: str, queues: int, bodies: Iterable[bytes], batch: int = 1000) -> FillResult:
    """Append the given bodies round-robin over ``queues`` (a topic whose content a scenario reads back, e.g. orders)."""
    prefix = os.urandom(6).hex().upper()

    def batches(store: MessageStore, born: int) -> Iterator[list[PutItem]]:
        written, it = 0, iter(bodies)
        while chunk := list(itertools.islice(it, batch)):
            yield [PutItem(topic, (written + i) % queues, b, {"UNIQ_KEY": f"{prefix}{written + i:012X}"}, born)
                   for i, b in enumerate(chunk)]
            written += len(chunk)

    return _write(data_dir, topic, queues, batches)


def _write(data_dir: Path, topic: str, queues: int, batches: Callable[[MessageStore, int], Iterator[list[PutItem]]]) -> FillResult:
    """The store of ``data_dir`` with ``topic`` created and every batch ``batches(store, born_ms)`` yields put, then
    checkpointed (the log and consume queues fsynced, how far they are dispatched recorded) and closed."""
    store = MessageStore(StoreConfig(data_dir=data_dir, flush_mode="async"))
    started = time.perf_counter()
    written = 0
    try:
        store.create_topic(topic, queues)
        for items in batches(store, int(time.time() * 1000)):
            store.put(items)
            written += len(items)
        store.checkpoint()
        end = store.commit_log.end_offset
    finally:
        store.close()
    return FillResult(written, end, time.perf_counter() - started)


def _item(topic: str, queues: int, n: int, body: bytes, key: str, born: int, groups: int | None) -> PutItem:
    if groups is None:
        return PutItem(topic, n % queues, body, {"UNIQ_KEY": key}, born)
    group = f"g{n % groups}"
    return PutItem(topic, crc32c.crc32c(group.encode()) % queues, body, {"UNIQ_KEY": key, MESSAGE_GROUP: group}, born)
