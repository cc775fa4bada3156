"""Live producers per group, registered by heartbeat, for check-backs.

Membership is snapshotted to disk when it changes (not on every heartbeat), so
a restarted broker can check back at once instead of waiting for heartbeats;
restored members get a fresh expiry window. The same changes (registrations and
expiries, not heartbeats) are written to the log as ``producer`` records, so a
broker set's new leader checks back the producers its predecessor knew
(``producer_transactions.replay`` hands them to ``replay``). A snapshot the disk refuses is logged
once (not per heartbeat) and the change is kept in memory: registrations are
soft state that producers renew, and the next change writes them all again. An
expiry never raises into the check round that noticed it.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from halfmq.broker.store.atomic_file import DamagedFile, read_json, write_json
from halfmq.broker.store.failure_watch import FailureWatch
from halfmq.broker.store.message_store import MessageStore, StoreClosed, StoreNotWritable
from halfmq.broker.store.state_records import ProducerRecord, producer_record

log = logging.getLogger(__name__)


@dataclass
class ProducerEntry:
    group: str
    client_id: str
    check_url: str | None
    last_seen: float
    address: str | None = None  # what check_url resolved to when it was checked; the broker dials this
    heard_at: float = 0.0  # wall-clock time of the last heartbeat (0: restored, not heard since), for operators


class ProducerRegistry:
    def __init__(self, path: Path | None, expiry: float, clock: Callable[[], float] = time.monotonic, *,
                 store: MessageStore | None = None) -> None:
        self._path = path
        self._store = store  # where registrations and expiries are written as ``producer`` records (None: nowhere)
        self._journal = FailureWatch("cannot write a producer's registration or expiry to the log: %s", "producer records written again", log)
        self._expiry = expiry
        self._clock = clock
        self._groups: dict[str, dict[str, ProducerEntry]] = {}
        self._cursor: dict[str, itertools.count[int]] = {}
        self._saves = FailureWatch(f"cannot write {path}: %s; producers stay registered in memory", f"{path} written again", log)
        if path is not None:
            now = clock()
            try:
                entries: list[ProducerEntry] = read_json(path, [], _parse_producers)
            except DamagedFile as exc:  # soft state: producers heartbeat again within their expiry
                log.warning("%s; starting with no registered producers until they heartbeat again", exc)
                entries = []
            for entry in entries:  # restored members get a fresh expiry window
                entry.last_seen = now
                self._groups.setdefault(entry.group, {})[entry.client_id] = entry

    def heartbeat(self, group: str, client_id: str, check_url: str | None, address: str | None = None) -> int | None:
        """Register or refresh a producer; a registration (new, or a changed check URL) is written to the log, and
        where that record ends is returned (the caller answers once it is durable). A refresh writes nothing: None."""
        entry = ProducerEntry(group, client_id, check_url, self._clock(), address, heard_at=time.time())
        existing = self._groups.get(group, {}).get(client_id)
        end = None
        if existing is None or existing.check_url != check_url or existing.address != address:
            end = self._log(ProducerRecord(group, client_id, check_url, address, expired=False))
            others = [e for e in self._entries() if (e.group, e.client_id) != (group, client_id)]
            self._save([*others, entry])
        self._groups.setdefault(group, {})[client_id] = entry
        return end

    def log_to(self, store: MessageStore) -> None:
        """Write registrations and expiries to ``store``'s log from now on: the broker that writes (one, or a set's leader)."""
        self._store = store

    def replay(self, record: ProducerRecord) -> None:
        """A registration or expiry read back from the log: a registered producer gets a fresh expiry window."""
        members = self._groups.setdefault(record.group, {})
        if record.expired:
            members.pop(record.client_id, None)
        else:
            members[record.client_id] = ProducerEntry(record.group, record.client_id, record.check_url, self._clock(), record.address)

    def registrations(self) -> list[ProducerRecord]:
        """Every registration held now, as its ``producer`` record says it: what a state snapshot keeps of them."""
        return [ProducerRecord(e.group, e.client_id, e.check_url, e.address, expired=False) for e in self._entries()]

    def live(self, group: str) -> list[ProducerEntry]:
        """Producers of ``group`` that heartbeated within the expiry and can be called back."""
        now = self._clock()
        members = self._groups.get(group, {})
        expired = [cid for cid, e in members.items() if now - e.last_seen > self._expiry]
        for cid in expired:
            entry = members.pop(cid)
            self._log(ProducerRecord(group, cid, entry.check_url, entry.address, expired=True))
        if expired:
            self._save(self._entries())
        return [e for e in members.values() if e.check_url]

    def rotation(self, group: str) -> list[ProducerEntry]:
        """Live producers starting from the next one in round-robin order."""
        live = sorted(self.live(group), key=lambda e: e.client_id)
        if not live:
            return []
        start = next(self._cursor.setdefault(group, itertools.count())) % len(live)
        return live[start:] + live[:start]

    def registered(self, group: str, client_id: str, check_url: str) -> ProducerEntry | None:
        """The live entry already registered with this very URL (its address was checked then)."""
        entry = self._groups.get(group, {}).get(client_id)
        if entry is None or entry.check_url != check_url or self._clock() - entry.last_seen > self._expiry:
            return None
        return entry

    def groups(self) -> dict[str, list[ProducerEntry]]:
        return {g: self.live(g) for g in list(self._groups)}

    def group_names(self) -> list[str]:
        """Every producer group with a registration, by name (a page of them is then read with ``live``)."""
        return sorted(self._groups)


    def _entries(self) -> list[ProducerEntry]:
        return [e for members in self._groups.values() for e in members.values()]

    def _log(self, record: ProducerRecord) -> int | None:
        """Write ``record`` to the log; its end. A disk that refuses is logged once, never raised: the change is kept in
        memory (soft state, as with the snapshot), and a set's next leader learns it from the producer's next change."""
        if self._store is None:
            return None
        try:
            _, end = self._store.put([producer_record(record)])
        except (StoreNotWritable, StoreClosed) as exc:
            self._journal.failed(exc)
            return None
        self._journal.succeeded()
        return end

    def _save(self, entries: list[ProducerEntry]) -> None:
        if self._path is None:
            return
        try:
            write_json(self._path, {"producers": [
                {"group": e.group, "client_id": e.client_id, "check_url": e.check_url, "address": e.address} for e in entries]})
        except OSError as exc:  # a full disk: members stay in memory, written with the next change
            self._saves.failed(exc)
            return
        self._saves.succeeded()


def _parse_producers(raw: dict) -> list[ProducerEntry]:
    """Entries saved before check addresses were pinned are dropped: they re-register with their next heartbeat."""
    return [ProducerEntry(str(e["group"]), str(e["client_id"]), e.get("check_url"), 0.0, e.get("address"))
            for e in raw["producers"] if not (e.get("check_url") and not e.get("address"))]
