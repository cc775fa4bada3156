"""The old names of the transactional producer, kept one release: it is now ``Producer(url, transactional_id=…)``.

Why the change: a Kafka-style transactional producer is the producer with one option set, as in
aiokafka and confluent-kafka; beside ``TransactionProducer`` (RocketMQ's half messages) the old
name was one suffix away from an unrelated class. Each alias builds the one producer and warns.
"""

from __future__ import annotations

import warnings

from .producer import AsyncProducer, Producer
from .transport import TIMEOUT, Verify

__all__ = ["AsyncTransactionalProducer", "TransactionalProducer"]


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"{old} is deprecated: use {new}(url, transactional_id=...)", DeprecationWarning, stacklevel=3)


class TransactionalProducer(Producer[None]):
    """Deprecated: ``Producer(url, transactional_id=…)`` (``batch_size`` is its ``transaction_batch_size``)."""

    def __init__(self, base_url: str | None, transactional_id: str, *, transaction_timeout_ms: int | None = None,
                 batch_size: int = 100, timeout: float = TIMEOUT, retries: int = 3,
                 token: str | None = None, verify: Verify | None = None) -> None:
        """The old signature; warns (``DeprecationWarning``) with the new spelling."""
        _deprecated("TransactionalProducer", "Producer")
        super().__init__(base_url, transactional_id=transactional_id, transaction_timeout_ms=transaction_timeout_ms,
                         transaction_batch_size=batch_size, timeout=timeout, retries=retries, token=token, verify=verify)


class AsyncTransactionalProducer(AsyncProducer[None]):
    """Deprecated: ``AsyncProducer(url, transactional_id=…)`` (``batch_size`` is its ``transaction_batch_size``)."""

    def __init__(self, base_url: str | None, transactional_id: str, *, transaction_timeout_ms: int | None = None,
                 batch_size: int = 100, timeout: float = TIMEOUT, retries: int = 3,
                 token: str | None = None, verify: Verify | None = None) -> None:
        """The old signature; warns (``DeprecationWarning``) with the new spelling."""
        _deprecated("AsyncTransactionalProducer", "AsyncProducer")
        super().__init__(base_url, transactional_id=transactional_id, transaction_timeout_ms=transaction_timeout_ms,
                         transaction_batch_size=batch_size, timeout=timeout, retries=retries, token=token, verify=verify)
