"""Receipt handles: opaque to clients, self-describing to the broker, and signed by it.

A handle names the exact delivery (group, topic, queue, offset, delivery
nonce) and the broker incarnation that issued it, so an ack for an older
delivery of the same message, or from before a restart, is recognised as
expired instead of settling someone else's delivery.

It also carries an HMAC under a key kept in the data directory: without it a
client could write a handle for a group that never received (once enough to
bring that group into being) or edit the offset of a real one to settle a
delivery it was never given. The key outlives restarts, so a handle from an
earlier incarnation still verifies and answers EXPIRED, as before.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path

from halfmq.broker.store.atomic_file import read_json, write_json
from halfmq.errors import InvalidReceiptHandle

SEP = "\x1f"
MAC_BYTES = 16
KEY_BYTES = 32


def _mac(key: bytes, raw: bytes) -> bytes:
    return hmac.digest(key, raw, hashlib.sha256)[:MAC_BYTES]


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    group: str
    topic: str
    queue_id: int
    offset: int
    nonce: int
    epoch: str

    def encode(self, key: bytes) -> str:
        raw = SEP.join((self.group, self.topic, str(self.queue_id), str(self.offset), str(self.nonce), self.epoch)).encode()
        return base64.urlsafe_b64encode(raw + _mac(key, raw)).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str, key: bytes) -> ReceiptHandle:
        try:
            blob = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
            raw, mac = blob[:-MAC_BYTES], blob[-MAC_BYTES:]
            if not raw or not hmac.compare_digest(mac, _mac(key, raw)):
                raise ValueError("not signed by this broker")
            group, topic, queue_id, offset, nonce, epoch = raw.decode().split(SEP)
            return cls(group, topic, int(queue_id), int(offset), int(nonce), epoch)
        except (ValueError, binascii.Error, UnicodeError):
            raise InvalidReceiptHandle(f"not a receipt handle issued by this broker: {text[:64]!r}") from None


def load_or_create_key(path: Path) -> bytes:
    """The broker's receipt-signing key: read from ``path``, or made and written there once."""
    stored = read_json(path, None)
    if stored is not None:
        return bytes.fromhex(stored["key"])
    key = secrets.token_bytes(KEY_BYTES)
    write_json(path, {"key": key.hex()})
    return key
