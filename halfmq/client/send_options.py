"""The options every send takes beside a bare body, defined once.

``Producer.send``, ``AsyncProducer.send`` and both ``send_in_transaction``
accept them as keywords (``**options: Unpack[SendOptions]``), so a new option
is added here and nowhere else; type checkers and IDEs still see each keyword.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import TypedDict

__all__ = ["SendOptions", "check_send_options"]


class SendOptions(TypedDict, total=False):
    """Message fields given beside a bare body (with an ``OutgoingMessage``, set them inside it)."""

    keys: list[str] | str | None
    tag: str | None
    properties: Mapping[str, str] | None
    queue_id: int | None
    sharding_key: str | None
    message_group: str | None  # FIFO: the group's messages are delivered in send order, one at a time
    deliver_at: datetime | float | None  # delivered at this time (an aware datetime, or epoch seconds), not before
    delay: timedelta | float | None  # delivered this long (seconds) after it becomes visible: a half's at its commit


_NAMES = tuple(SendOptions.__annotations__)


def check_send_options(options: Mapping[str, object], *, beside_a_message: bool = False) -> None:
    """A TypeError for a keyword that is no send option, or for options given beside a ready ``OutgoingMessage``."""
    unknown = sorted(set(options) - set(_NAMES))
    if unknown:
        raise TypeError(f"unexpected send option(s) {', '.join(map(repr, unknown))}; the options are {', '.join(_NAMES)}")
    if beside_a_message and any(value is not None for value in options.values()):
        raise TypeError(f"pass {'/'.join(_NAMES)} inside the OutgoingMessage, not beside it")
