"""The receipt handles a broker signs: under one key (the log's, on every node of a set) and this runtime's epoch.

The key comes from the data dir (``receipt_handle.load_or_create_key``) until the log names one: the first leader
writes its key in the log before it signs its first handle (``receipt_key_record``), and every node that replays
the log uses that one, so a handle signed by one leader is checked by the next. The epoch is new at each runtime: a
handle issued before a restart or a failover answers expired, since the deliveries it named are not held any more.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from halfmq.broker.store.message_store import PutItem
from halfmq.broker.store.state_records import receipt_key_record
from halfmq.errors import InvalidReceiptHandle

from .receipt_handle import KEY_BYTES, ReceiptHandle


class Receipts:
    def __init__(self, key: bytes | None = None) -> None:
        self.epoch = secrets.token_hex(4)
        self._key = key or secrets.token_bytes(KEY_BYTES)
        self.key_in_log = False  # whether the log names the key (then it is that one, on every node of a set)

    def sign(self, group: str, topic: str, queue_id: int, offset: int, nonce: int) -> str:
        return ReceiptHandle(group, topic, queue_id, offset, nonce, self.epoch).encode(self._key)

    def parse(self, handles: list[str]) -> list[ReceiptHandle]:
        """Decode and verify ``handles`` (INVALID_RECEIPT_HANDLE for one this broker did not sign)."""
        return [ReceiptHandle.decode(text, self._key) for text in handles]

    def resolve(self, group: str, topic: str, handles: list[str]) -> list[tuple[str, ReceiptHandle]]:
        """``parse``, each with its text, refusing a handle of another group or topic than the request names."""
        parsed = []
        for text in handles:
            handle = ReceiptHandle.decode(text, self._key)
            if handle.group != group or handle.topic != topic:
                raise InvalidReceiptHandle(f"receipt handle belongs to {handle.group}/{handle.topic}, not {group}/{topic}")
            parsed.append((text, handle))
        return parsed

    @property
    def logged_key(self) -> bytes | None:
        """The key, if the log names it (what a state snapshot keeps in place of the record); None otherwise."""
        return self._key if self.key_in_log else None

    def use_logged_key(self, key: bytes) -> None:
        """The key the log names (replay)."""
        self._key = key
        self.key_in_log = True

    def log_key(self, put: Callable[[list[PutItem]], object]) -> None:
        """Name this broker's key in the log with ``put`` (the store's), once, before the first handle is signed."""
        put([receipt_key_record(self._key)])
        self.key_in_log = True
