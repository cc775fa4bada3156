"""Signed check-backs: the broker proves a check request is its own, the producer's check app verifies.

HMAC-SHA256 with the producer group's secret over ``"<unix seconds>." + body``
(the Stripe webhook scheme), sent as ``X-Halfmq-Timestamp`` and
``X-Halfmq-Signature: v1=<hex>``. The body carries the transaction id and
its check count, so a signature cannot be moved to another transaction; a
request older or newer than ``window`` seconds is stale, and one the app has
already seen inside the window is a replay. Shared by the broker and the SDK
(like ``protocol`` and ``errors``), so both sides spell it once.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from collections.abc import Callable

from halfmq.errors import CheckSignatureInvalid

TIMESTAMP_HEADER = "x-halfmq-timestamp"
SIGNATURE_HEADER = "x-halfmq-signature"
VERSION = "v1="
DEFAULT_WINDOW = 300.0


def signature(secret: bytes, timestamp: int, body: bytes) -> str:
    return VERSION + hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def signed_headers(secret: bytes, body: bytes, now: float | None = None) -> dict[str, str]:
    timestamp = int(time.time() if now is None else now)
    return {TIMESTAMP_HEADER: str(timestamp), SIGNATURE_HEADER: signature(secret, timestamp, body)}


class CheckVerifier:
    """Refuses unsigned, tampered, stale and replayed check requests (CheckSignatureInvalid)."""

    def __init__(self, secret: bytes, window: float = DEFAULT_WINDOW, clock: Callable[[], float] = time.time) -> None:
        if not secret:
            raise ValueError("a check secret must not be empty")
        self._secret = secret
        self._window = window
        self._clock = clock
        self._seen: dict[str, float] = {}  # signature -> when it leaves the window

    def verify(self, timestamp: str | None, sig: str | None, body: bytes) -> None:
        if not timestamp or not sig:
            raise CheckSignatureInvalid("the check request is not signed")
        # A header is any latin-1 text, and compare_digest raises TypeError on a str that is not ASCII:
        # a signature or timestamp outside ASCII is a refusal, never a 500.
        if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 20):
            raise CheckSignatureInvalid("the check request's timestamp is not a number")
        if not sig.isascii():
            raise CheckSignatureInvalid("the check request's signature does not match its body")
        ts = int(timestamp)
        if not hmac.compare_digest(signature(self._secret, ts, body), sig):
            raise CheckSignatureInvalid("the check request's signature does not match its body")
        now = self._clock()
        if abs(now - ts) > self._window:
            raise CheckSignatureInvalid(f"the check request is stale: signed {now - ts:.0f}s ago, the window is {self._window:.0f}s")
        self._forget(now)
        if sig in self._seen:
            raise CheckSignatureInvalid("the check request was already answered (a replay)")
        self._seen[sig] = ts + self._window

    def _forget(self, now: float) -> None:
        if len(self._seen) > 1024:
            self._seen = {s: until for s, until in self._seen.items() if until >= now}
