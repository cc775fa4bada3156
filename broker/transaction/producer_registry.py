"""Live producers per group, registered by heartbeat, for check-backs.

Membership is snapshotted to disk when it changes (not on every heartbeat), so
a restarted broker can check back at once instead of waiting for heartbeats;
restored members get a fresh expiry window.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from broker.store.atomic_file import read_json, write_json


@dataclass
class ProducerEntry:
    group: str
    client_id: str
    check_url: str | None
    last_seen: float
    address: str | None = None  # what check_url resolved to when it was checked; the broker dials this


class ProducerRegistry:
    def __init__(self, path: Path | None, expiry: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._path = path
        self._expiry = expiry
        self._clock = clock
        self._groups: dict[str, dict[str, ProducerEntry]] = {}
        self._cursor: dict[str, itertools.count[int]] = {}
        if path is not None:
            now = clock()
            for entry in read_json(path, {"producers": []})["producers"]:
                if entry.get("check_url") and not entry.get("address"):
                    continue  # saved before addresses were pinned: it re-registers with its next heartbeat
                self._groups.setdefault(entry["group"], {})[entry["client_id"]] = ProducerEntry(
                    entry["group"], entry["client_id"], entry.get("check_url"), now, entry.get("address"))

    def heartbeat(self, group: str, client_id: str, check_url: str | None, address: str | None = None) -> None:
        members = self._groups.setdefault(group, {})
        existing = members.get(client_id)
        changed = existing is None or existing.check_url != check_url or existing.address != address
        members[client_id] = ProducerEntry(group, client_id, check_url, self._clock(), address)
        if changed:
            self._save()

    def live(self, group: str) -> list[ProducerEntry]:
        """Producers of ``group`` that heartbeated within the expiry and can be called back."""
        now = self._clock()
        members = self._groups.get(group, {})
        expired = [cid for cid, e in members.items() if now - e.last_seen > self._expiry]
        for cid in expired:
            del members[cid]
        if expired:
            self._save()
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

    def _save(self) -> None:
        if self._path is None:
            return
        entries = [
            {"group": e.group, "client_id": e.client_id, "check_url": e.check_url, "address": e.address}
            for members in self._groups.values() for e in members.values()
        ]
        write_json(self._path, {"producers": entries})
