"""Receipt handles: opaque to clients, self-describing to the broker.

A handle names the exact delivery (group, topic, queue, offset, delivery
nonce) and the broker incarnation that issued it, so an ack for an older
delivery of the same message, or from before a restart, is recognised as
expired instead of settling someone else's delivery.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from broker.errors import InvalidReceiptHandle

SEP = "\x1f"


@dataclass(frozen=True, slots=True)
class ReceiptHandle:
    group: str
    topic: str
    queue_id: int
    offset: int
    nonce: int
    epoch: str

    def encode(self) -> str:
        raw = SEP.join((self.group, self.topic, str(self.queue_id), str(self.offset), str(self.nonce), self.epoch))
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> "ReceiptHandle":
        try:
            raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
            group, topic, queue_id, offset, nonce, epoch = raw.split(SEP)
            return cls(group, topic, int(queue_id), int(offset), int(nonce), epoch)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            raise InvalidReceiptHandle(f"not a receipt handle issued by this broker: {text[:64]!r}") from None
