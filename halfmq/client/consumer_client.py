"""The old names of the receive/ack-by-hand consumers, kept for one release.

halfmq now uses RocketMQ 5's names (``simple_consumer``): ``ConsumerClient``
is ``SimpleConsumer`` and ``AsyncConsumerClient`` is ``AsyncSimpleConsumer``.
The old names still work, and say once per call site which name to write
instead. This module goes in the next release.
"""

from __future__ import annotations

import warnings
from typing import Any

from .simple_consumer import AsyncSimpleConsumer, SimpleConsumer

__all__ = ["AsyncConsumerClient", "ConsumerClient"]


def _renamed(old: str, new: str) -> None:
    warnings.warn(f"halfmq.{old} is deprecated: use halfmq.{new} (RocketMQ 5's name), the same class", DeprecationWarning, stacklevel=3)


class ConsumerClient(SimpleConsumer):
    """Deprecated spelling of ``SimpleConsumer``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _renamed("ConsumerClient", "SimpleConsumer")
        super().__init__(*args, **kwargs)


class AsyncConsumerClient(AsyncSimpleConsumer):
    """Deprecated spelling of ``AsyncSimpleConsumer``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        _renamed("AsyncConsumerClient", "AsyncSimpleConsumer")
        super().__init__(*args, **kwargs)
