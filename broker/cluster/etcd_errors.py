"""What the etcd client raises, apart from the client: a single broker's modules that only name these errors (the
RocketMQ front, the set's view behind /metrics) then load neither the client nor httpx at the broker's start."""

from __future__ import annotations


class EtcdUnavailable(Exception):
    """etcd did not answer (down, partitioned, timed out): leadership cannot be proven or renewed."""


class EtcdRefused(EtcdUnavailable):
    """etcd answered but refused: wrong credentials, no token, or no permission on the key."""

    def __init__(self, message: str, status: int = 0, etcd_message: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.etcd_message = etcd_message
