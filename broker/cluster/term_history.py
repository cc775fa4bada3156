"""Which term wrote which stretch of the log (Kafka's leader-epoch cache), to find where two logs diverge.

Entries are (term, start offset), in order. A leader adds one when it is elected;
followers copy the leader's. A node that comes back asks its leader where its
own last term ends in the leader's log and truncates there.
"""

from __future__ import annotations

from pathlib import Path

from halfmq.broker.store.atomic_file import json_bytes, read_json, write_json


class TermHistory:
    def __init__(self, path: Path) -> None:
        self.path = path
        stored: dict[str, list[list[int]]] = read_json(path, {"entries": []}, lambda raw: raw)
        self.entries: list[tuple[int, int]] = [tuple(e) for e in stored["entries"]]  # type: ignore[misc]  # each entry is [term, offset]

    @property
    def last_term(self) -> int:
        return self.entries[-1][0] if self.entries else 0

    def begin(self, term: int, start: int) -> None:
        """Record that ``term`` writes from ``start`` on (elected, or heard from a new leader)."""
        if term <= self.last_term:
            return
        self.entries.append((term, start))
        self._save()

    def end_of(self, term: int, log_end: int) -> int:
        """Where ``term``'s records end in this log: the start of the first later term, else the log end."""
        for t, start in self.entries:
            if t > term:
                return start
        return log_end

    def known_at_most(self, term: int) -> int:
        """The latest term of this log that is not after ``term`` (0: none). A leader answers it with ``end_of``, so a
        follower whose last term this log never had (its own short leadership) learns which term they last share."""
        return max((t for t, _ in self.entries if t <= term), default=0)

    def divergence(self, asked: int, answered: int, leader_end: int, log_end: int) -> int:
        """Where this log must be cut, given the leader's answer to "where does term ``asked`` end?" (KIP-279).

        The leader answered ``answered``, its latest term not after ``asked``, ending at ``leader_end``. If it never had
        ``asked``, this log's records from the end of ``answered`` on were written by a leadership the leader does not
        know, whatever their length: cut at the earlier of the two ends (without this, a record of the same length at
        the same offset in a term the leader skipped survived, and the logs differed in one record)."""
        cut = min(leader_end, log_end)
        if answered < asked:
            cut = min(cut, self.end_of(answered, log_end))
        return cut

    def adopt(self, leader_entries: list[tuple[int, int]], log_end: int) -> None:
        """Take the leader's entries that lie within this log (the later ones arrive with the bytes)."""
        entries = self._within(leader_entries, log_end)
        if entries != self.entries:
            self.entries = entries
            self._save()

    def truncate(self, offset: int) -> None:
        entries = [(t, s) for t, s in self.entries if s <= offset]
        if entries != self.entries:
            self.entries = entries
            self._save()

    def adopted(self, leader_entries: list[tuple[int, int]], log_end: int) -> bytes:
        """The file ``adopt`` would write, for a data dir that switches to it in one step (log_start.begin_at)."""
        return json_bytes(_document(self._within(leader_entries, log_end)))

    @staticmethod
    def _within(leader_entries: list[tuple[int, int]], log_end: int) -> list[tuple[int, int]]:
        return [(t, s) for t, s in leader_entries if s <= log_end]

    def _save(self) -> None:
        write_json(self.path, _document(self.entries))


def _document(entries: list[tuple[int, int]]) -> dict[str, list[list[int]]]:
    return {"entries": [list(e) for e in entries]}
