"""What one principal's idempotent producers may hold in the broker's memory, and what happens past it (pure).

Each producer id keeps a window of remembered numbers (``send_window``), a small constant each
(``producer_ids.SentRef``). Without a cap per principal, one principal could take producer ids (or
initialise transactional ids) until the broker's memory ran out; with these caps it holds at most
``producer_ids`` ids obtained alone, and ``sequences`` remembered numbers across all its producers.

Past a cap, the principal's least recently used producer id obtained alone is forgotten to make room
(as an idle one expires: its next send is UNKNOWN_PRODUCER_ID and the SDK takes a new id), but only once it
has been idle ``evictable_after_ms``: an id that sent a moment ago may still have a retry on its way, whose
answer must come from its window. If none is idle that long, the request is refused with 429 and a
Retry-After of when one will be. A transactional id's producer is never forgotten this way (its numbers
are its epoch's); its remembered numbers count towards ``sequences`` all the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum


@dataclass(frozen=True)
class PrincipalCaps:
    producer_ids: int = 64  # live producer ids obtained alone (POST /v1/producer-ids): the SDK takes one per Producer
    sequences: int = 131_072  # remembered numbers across the principal's windows: 64 ids' worst case at the default window
    evictable_after_ms: int = 300_000  # an id idle this long may be forgotten for its principal's new one


class Room(str, Enum):
    FITS = "fits"  # within both caps
    FORGET_LEAST_RECENT = "forget_least_recent"  # past a cap: forget the least recently used id, then decide again
    FULL = "full"  # past a cap and nothing may be forgotten yet: 429


def room(caps: PrincipalCaps, *, ids: int, sequences: int, more_ids: int, more_sequences: int,
         least_recent_idle_ms: int | None) -> Room:
    """Whether a principal holding ``ids`` and ``sequences`` may take ``more_ids`` and ``more_sequences`` more.

    ``least_recent_idle_ms``: how long the principal's least recently used id obtained alone (other than the one
    sending) has been idle; None when it has none.
    """
    if ids + more_ids <= caps.producer_ids and sequences + more_sequences <= caps.sequences:
        return Room.FITS
    if least_recent_idle_ms is not None and least_recent_idle_ms >= caps.evictable_after_ms:
        return Room.FORGET_LEAST_RECENT
    return Room.FULL


def retry_after_seconds(caps: PrincipalCaps, least_recent_idle_ms: int | None) -> int | None:
    """When a FULL principal may try again: once its least recently used id may be forgotten (None: no such id)."""
    if least_recent_idle_ms is None:
        return None
    return max(1, math.ceil((caps.evictable_after_ms - least_recent_idle_ms) / 1000))
