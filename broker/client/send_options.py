"""The options every send takes beside a bare body, defined once.

``Producer.send``, ``AsyncProducer.send`` and both ``send_in_transaction``
accept them as keywords (``**options: Unpack[SendOptions]``), so a new option
is added here and nowhere else; type checkers and IDEs still see each keyword.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

__all__ = ["SendOptions", "check_send_options"]


class SendOptions(TypedDict, total=False):
    """Message fields given beside a bare body (with an ``OutgoingMessage``, set them inside it)."""

    keys: list[str] | str | None
    tag: str | None
    properties: Mapping[str, str] | None
    queue_id: int | None
    sharding_key: str | None


_NAMES = frozenset(SendOptions.__annotations__)


def check_send_options(options: Mapping[str, object]) -> None:
    """A TypeError for a keyword that is no send option, as a misspelt keyword argument would give."""
    unknown = sorted(set(options) - _NAMES)
    if unknown:
        raise TypeError(f"unexpected send option(s) {', '.join(map(repr, unknown))}; the options are {', '.join(sorted(_NAMES))}")
