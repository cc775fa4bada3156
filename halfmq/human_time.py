"""Times said the way a person reads them ("3 s ago", "in 12 s", "due now", "4 min"), for the console and `halfmq admin`.

One place, so the terminal and the browser never disagree about how old a transaction is.
"""

from __future__ import annotations

import datetime
import time


def duration(seconds: float | None) -> str:
    """A span of time in the largest unit that keeps it readable: "850 ms", "42 s", "4 min", "3 h", "2 d"."""
    if seconds is None:
        return "-"
    s = abs(seconds)
    if s < 1:
        return f"{s * 1000:.0f} ms"
    for unit, size, below in (("s", 1, 90), ("min", 60, 90 * 60), ("h", 3600, 36 * 3600)):
        if s < below:
            return f"{s / size:.0f} {unit}"
    return f"{s / 86400:.0f} d"


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


def parse_duration(text: str | float) -> float:
    """Seconds from "30", "30s", "500ms", "15m", "12h", "7d" or "2w" (what an operator writes in a setting);
    ValueError for anything else, negative spans included."""
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        raw = text.strip().lower()
        number = raw.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
        unit = raw[len(number):].strip() or "s"
        if unit not in _UNITS or not number:
            raise ValueError(f"{text!r} is not a duration: a number of seconds, or one with a unit ({', '.join(_UNITS)})")
        seconds = float(number) * _UNITS[unit]
    if not 0 <= seconds < float("inf"):
        raise ValueError(f"{text!r} is not a duration of zero or more seconds")
    return seconds


BROKERS = "broker"  # a topic's limit typed as this: back to the broker's (`topics alter --retention broker`, the console's form)


def retention_ms(text: str) -> int | None:
    """A topic's retention by age as an operator types it (``30s``, ``12h``, ``7d``), in ms; None for ``broker``;
    ValueError otherwise. `halfmq admin` and the console read it the same way."""
    return None if text == BROKERS else int(parse_duration(text) * 1000)


def retention_bytes(text: str) -> int | None:
    """A topic's retention by size per queue as an operator types it (a count of bytes); None for ``broker``;
    ValueError otherwise."""
    return None if text == BROKERS else int(text)


def epoch_ms(text: str) -> int:
    """An ISO 8601 date and time (UTC unless it names its offset: "2026-11-29T07:00:00", "...Z", "...+01:00") in epoch
    milliseconds, as an operator names the instant a group's offsets go back to; ValueError for anything else."""
    at = datetime.datetime.fromisoformat(text)
    return int((at if at.tzinfo else at.replace(tzinfo=datetime.UTC)).timestamp() * 1000)


def when(ms: int | None, now: float | None = None) -> str:
    """An epoch-ms instant relative to now: "3 s ago" or "in 12 s" ("-" when there is none)."""
    if not ms:
        return "-"
    seconds = ms / 1000 - (time.time() if now is None else now)
    return f"in {duration(seconds)}" if seconds >= 0.5 else ("now" if seconds > -0.5 else f"{duration(seconds)} ago")


def due(ms: int | None, now: float | None = None) -> str:
    """A deadline: "in 12 s", or "due now" once it has passed (a check the broker is about to make is not "0s ago")."""
    if not ms:
        return "-"
    return "due now" if ms / 1000 <= (time.time() if now is None else now) + 0.5 else when(ms, now)
