"""Where is my message? A message's journey (GET /v1/messages/{msg_id}) and a search by key (GET /v1/messages?key=)."""

from __future__ import annotations

from enum import Enum

from halfmq.wire.base import _Wire


class JourneyEventKind(str, Enum):
    """What happened to a message, as the log tells it."""

    SENT = "sent"  # stored on its topic (a plain send; a transaction's or a timer's copy says committed/released)
    HALF_STORED = "half_stored"  # a RocketMQ half message, invisible until its transaction ends
    CHECKED = "checked"  # a check-back reached the producer; ``answer`` is what it said
    COMMITTED = "committed"
    ROLLED_BACK = "rolled_back"
    DISCARDED = "discarded"  # too many checks without an answer
    RESENT = "resent"  # a discarded transaction's message sent again by an operator, or a dead letter put back
    TIMER_STORED = "timer_stored"  # a timed message waiting for its due time
    RELEASED = "released"  # a timed message made visible at its due time
    DELIVERED = "delivered"  # handed to a consumer of ``group``; ``attempt`` counts from 1
    NACKED = "nacked"  # ``detail``: the consumer's reason
    DEAD_LETTERED = "dead_lettered"
    ACKED = "acked"  # an acks record names it (``at_ms``), or the group's committed offset is past it


class JourneyEvent(_Wire):
    kind: JourneyEventKind
    at_ms: int | None = None  # when the record saying it was stored (None: known, but not when)
    topic: str | None = None
    queue_id: int | None = None
    queue_offset: int | None = None
    group: str | None = None  # the consumer group (acked, dead-lettered) or producer group (half, checks)
    transaction_id: str | None = None
    answer: str | None = None  # a check-back's answer
    attempt: int | None = None  # a delivery's
    due_ms: int | None = None  # a timed message's due time
    detail: str | None = None


class MessageSummary(_Wire):
    """A message where its producer sent it (a half message's real topic and queue); offsets once it is visible."""

    msg_id: str
    topic: str
    queue_id: int
    commit_log_offset: int
    store_timestamp: int
    queue_offset: int | None = None  # None until it is visible on its topic (a pending half, a waiting timer)
    keys: list[str] = []
    tag: str | None = None
    message_group: str | None = None
    deliver_at_ms: int | None = None
    producer_group: str | None = None
    transaction_id: str | None = None
    state: str = "visible"  # visible | pending | rolled_back | discarded | waiting (a timer)


class MessageJourney(_Wire):
    """Where is my message: the message (``MessageSummary``) and what the log says happened to it (``JourneyEvent``s)."""

    message: MessageSummary
    events: list[JourneyEvent]  # in time order


class MessageSearch(_Wire):
    key: str
    messages: list[MessageSummary]  # newest first
