"""Grants for tests that call a use case directly: made by the runtime's own ``Access``, as a front would ask for them."""

from __future__ import annotations

from typing import Any

from halfmq.broker.security.access import ANONYMOUS, Publisher, Subscriber

SCOPE = {"type": "http", "path": "/test", "headers": []}


def subscribed(rt: Any, group: str, topic: str) -> Subscriber:
    """The anonymous principal's grant to consume ``topic`` as ``group`` (auth off: every check passes, and is counted)."""
    return rt.access.subscriber(ANONYMOUS, SCOPE, group, topic)  # type: ignore[no-any-return]


def publishing(rt: Any, topic: str, who: Any = ANONYMOUS) -> Publisher:
    return rt.access.publisher(who, SCOPE, topic)  # type: ignore[no-any-return]
