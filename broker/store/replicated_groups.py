"""Cutting a leader's log bytes into whole write groups: a follower takes a group entirely or not at all."""

from __future__ import annotations

from .record import HEADER_SIZE, RecordError, StoredMessage, decode, peek_size
from .store_types import ReplicationMismatch


def whole_group(view: memoryview, pos: int, start: int) -> tuple[list[StoredMessage], int] | None:
    """The write group at ``pos`` of ``view`` and where it ends, or None if the view holds only part of it.

    ``start`` is the log offset of ``view[0]``, for the error: a record that does not decode is
    ReplicationMismatch (the follower must resynchronise), never a partial group.
    """
    group: list[StoredMessage] = []
    at = pos
    while at + HEADER_SIZE <= len(view):
        size = peek_size(view, at)
        if size < HEADER_SIZE or at + size > len(view):
            return None
        try:
            rec = decode(view, at)
        except RecordError as exc:
            raise ReplicationMismatch(f"replicated record at {start + at} is damaged: {exc}") from None
        group.append(rec)
        at += size
        if not rec.group_more:
            return group, at
    return None
