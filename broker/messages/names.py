"""The one rule for every name a client chooses: topics, consumer and producer groups, transactional ids.

A name is 1-127 of ``A-Z a-z 0-9 _ -``: it goes into URL paths (the API's, the
console's), log and audit lines, metric labels and HTML, so it carries no
separator, dot segment, escape, control or direction character. Each kind
refuses with its own 400 problem code; every front reaches the check through the
domain service that creates the named thing (a topic's first write, a group's
first receive, a half's producer group, a transactional id's first init), never
through a route of its own. Names already on disk from before the rule are read
back as they are, and still served (the console encodes every path segment).
"""

from __future__ import annotations

from enum import Enum

from halfmq.errors import InvalidGroupName, InvalidRequest, InvalidTopicName, InvalidTransactionalId
from halfmq.wire.base import MAX_NAME_LENGTH, is_valid_name
from halfmq.wire.base import NAME_RULE as RULE

__all__ = ["MAX_NAME_LENGTH", "RULE", "NameKind", "checked_name", "is_valid_name"]


class NameKind(str, Enum):
    TOPIC = "topic"
    CONSUMER_GROUP = "consumer group"
    PRODUCER_GROUP = "producer group"
    TRANSACTIONAL_ID = "transactional id"


_REFUSAL: dict[NameKind, type[InvalidRequest]] = {
    NameKind.TOPIC: InvalidTopicName,
    NameKind.CONSUMER_GROUP: InvalidGroupName,
    NameKind.PRODUCER_GROUP: InvalidGroupName,
    NameKind.TRANSACTIONAL_ID: InvalidTransactionalId,
}


def checked_name(kind: NameKind, name: str) -> str:
    """``name`` itself, or the kind's 400 problem (the name shown shortened and escaped: it may be 5,000 characters of anything)."""
    if is_valid_name(name):
        return name
    shown = name if len(name) <= 64 else f"{name[:64]}… ({len(name)} characters)"
    raise _REFUSAL[kind](f"invalid {kind.value} {shown!r}: {RULE}")
