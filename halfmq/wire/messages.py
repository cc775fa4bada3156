"""Sending, receiving and settling messages: what the SDK sends and what the broker answers."""

from __future__ import annotations

import re
from typing import Annotated

from msgspec import UNSET, Meta, UnsetType

from halfmq.errors import InvalidDeliveryTime, InvalidMessageGroup, InvalidRequest, InvalidTagFilter
from halfmq.wire.base import (
    _ENCODINGS,
    MAX_BATCH,
    MAX_INVISIBLE_SECONDS,
    MAX_NACK_REASON,
    MAX_RECEIVE,
    MAX_TAG_LENGTH,
    MAX_WAIT_SECONDS,
    BodyEncoding,
    NonNegative,
    SendStatus,
    SettleStatus,
    _Request,
    _Wire,
    utf8_size,
)

MAX_MESSAGE_GROUP_BYTES = 64  # RocketMQ's proxy (maxMessageGroupSize)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def message_group_problem(group: str) -> str | None:
    """Why ``group`` cannot be a message group (1-64 bytes of UTF-8, no control character: RocketMQ's rule), or None."""
    size = utf8_size(group)
    if not 1 <= size <= MAX_MESSAGE_GROUP_BYTES:
        return f"a message group is 1 to {MAX_MESSAGE_GROUP_BYTES} bytes of UTF-8, not {size}"
    if _CONTROL.search(group):
        return "a message group must not contain control characters"
    return None


class _RefusedWhenBuilt(ValueError):
    """Mixed into the broker's typed error an ``OutgoingMessage`` raises when built: still the ``ValueError`` the SDK's
    callers catch, and still the broker's code where a body is decoded (msgspec wraps a ``ValueError`` from
    ``__post_init__`` in its ``ValidationError`` as the cause, which ``broker/api/body.py`` answers)."""


class MessageGroupRefused(InvalidMessageGroup, _RefusedWhenBuilt):
    """A message group that is not 1-64 bytes of UTF-8 without control characters (INVALID_MESSAGE_GROUP)."""


class MessageGroupConflict(InvalidRequest, _RefusedWhenBuilt):
    """A message group beside a ``queue_id`` or another ``sharding_key`` (INVALID_REQUEST)."""


class BothDeliveryTimes(InvalidDeliveryTime, _RefusedWhenBuilt):
    """Both ``deliver_at_ms`` and ``delay_ms`` (INVALID_DELIVERY_TIME)."""


class TagFilterRefused(InvalidTagFilter, _RefusedWhenBuilt):
    """A receive's tag filter past ``MAX_FILTER_TAGS`` tags or ``MAX_TAG_LENGTH`` characters a tag (INVALID_TAG_FILTER)."""


class OutgoingMessage(_Request, omit_defaults=True):
    """A message to send; checked when built, so a mistake shows at the line that made it.

    The broker decodes it with its bounds (``Meta``); what msgspec cannot say (a message group's bytes, one delivery
    time of two) raises the broker's own typed error here (a ``ValueError`` too, as it always was for the SDK's
    callers), so a body and a constructor are refused with the same code.
    """

    body: str
    body_encoding: BodyEncoding = "utf-8"
    keys: list[str] | str | None = None
    tag: Annotated[str, Meta(max_length=MAX_TAG_LENGTH)] | None = None
    properties: dict[str, str] = {}
    queue_id: NonNegative | None = None
    sharding_key: str | None = None
    message_group: str | None = None  # FIFO: delivered in send order within the group, one at a time (own queue)
    deliver_at_ms: NonNegative | None = None  # a timed message: delivered at this epoch time (ms), not before
    delay_ms: NonNegative | None = None  # a delayed message: delivered this long after it becomes visible (a half: its commit)

    def __post_init__(self) -> None:
        if not isinstance(self.body, str):
            raise TypeError(f"body must be str (bytes go through send(topic, b'...')), not {type(self.body).__name__}")
        if self.body_encoding not in _ENCODINGS:
            raise ValueError(f"body_encoding must be one of {_ENCODINGS}, not {self.body_encoding!r}")
        if self.tag is not None and len(self.tag) > MAX_TAG_LENGTH:
            raise ValueError(f"tag is {len(self.tag)} characters; at most {MAX_TAG_LENGTH}")
        if self.queue_id is not None and self.queue_id < 0:
            raise ValueError(f"queue_id must be >= 0, not {self.queue_id}")
        if self.deliver_at_ms is not None and self.delay_ms is not None:
            raise BothDeliveryTimes("give deliver_at_ms or delay_ms, not both")
        if (self.deliver_at_ms or 0) < 0 or (self.delay_ms or 0) < 0:
            raise ValueError("deliver_at_ms and delay_ms must be >= 0")
        if self.message_group is not None:
            problem = message_group_problem(self.message_group)
            if problem:
                raise MessageGroupRefused(problem)
            conflict = message_group_conflict(self.message_group, self.sharding_key, self.queue_id)
            if conflict:
                raise MessageGroupConflict(conflict)


def message_group_conflict(group: str, sharding_key: str | None, queue_id: int | None) -> str | None:
    """Why a message of ``group`` sets a field that would choose another queue, or None (the group picks the queue)."""
    if sharding_key is not None and sharding_key != group:
        return "sharding_key must be the message_group or unset: a message group is its own sharding key"
    if queue_id is not None:
        return "queue_id must be unset with a message_group: every message of a group goes to the group's queue"
    return None


class SendRequest(_Request, omit_defaults=True):
    """POST /v1/topics/{topic}/messages. An idempotent send (DESIGN section 11) carries all three numbers: the
    producer id and epoch from an init, and its sequence."""

    messages: Annotated[list[OutgoingMessage], Meta(min_length=1, max_length=MAX_BATCH)]
    producer_id: NonNegative | None = None
    epoch: NonNegative | None = None
    sequence: NonNegative | None = None


MAX_FILTER_TAGS = 32  # tags in one receive's filter (RocketMQ's "a || b" expression): a label set, not a query


def subscription_tags(expression: str | list[str] | tuple[str, ...] | None) -> frozenset[str] | None:
    """The tags a receive wants, from RocketMQ's tag expression (``"a || b"``; ``"*"`` or empty: all) or a list of tags;
    None: every message. Raises ValueError for a filter past ``MAX_FILTER_TAGS`` tags or ``MAX_TAG_LENGTH`` characters."""
    if expression is None:
        return None
    parts = expression.split("||") if isinstance(expression, str) else list(expression)
    if len(parts) > MAX_FILTER_TAGS:
        raise ValueError(f"a tag filter names at most {MAX_FILTER_TAGS} tags, not {len(parts)}")
    tags = frozenset(t.strip() for t in parts)
    if any(len(t) > MAX_TAG_LENGTH for t in tags):
        raise ValueError(f"a tag in a filter has at most {MAX_TAG_LENGTH} characters")
    tags -= {""}
    return None if not tags or "*" in tags else tags


class ReceiveRequest(_Request):
    """``tags``: only messages with one of these tags are delivered to the group (a list, or RocketMQ's expression
    ``"a || b"``; ``"*"``: all; at most ``MAX_FILTER_TAGS``, else INVALID_TAG_FILTER); the others are consumed for it
    (RocketMQ's tag subscription: filtered out, never delivered to this group later). None: every message."""

    max_messages: Annotated[int, Meta(ge=1, le=MAX_RECEIVE)] = 16
    invisible_seconds: Annotated[float, Meta(gt=0, le=MAX_INVISIBLE_SECONDS)] = 30.0
    wait_seconds: Annotated[float, Meta(ge=0, le=MAX_WAIT_SECONDS)] = 0.0
    tags: list[str] | str | None = None

    def __post_init__(self) -> None:
        if not 1 <= self.max_messages <= MAX_RECEIVE:
            raise ValueError(f"max_messages must be 1..{MAX_RECEIVE}, not {self.max_messages}")
        if not 0 < self.invisible_seconds <= MAX_INVISIBLE_SECONDS:
            raise ValueError(f"invisible_seconds must be > 0 and <= {MAX_INVISIBLE_SECONDS}, not {self.invisible_seconds}")
        if not 0 <= self.wait_seconds <= MAX_WAIT_SECONDS:
            raise ValueError(f"wait_seconds must be 0..{MAX_WAIT_SECONDS}, not {self.wait_seconds}")
        if self.tags is not None:
            try:
                subscription_tags(self.tags)
            except ValueError as exc:
                raise TagFilterRefused(str(exc)) from None


Handles = Annotated[list[str], Meta(min_length=1, max_length=MAX_RECEIVE)]


class SettleRequest(_Request):
    """An ack's body: the receipt handles it settles."""

    receipt_handles: Handles


class NackRequest(SettleRequest, omit_defaults=True):
    """A nack's body; ``reason``: why, kept in the message's journey."""

    reason: Annotated[str, Meta(max_length=MAX_NACK_REASON)] | None = None


class ChangeInvisibleRequest(SettleRequest):
    """A change of the handles' invisible time: hidden ``invisible_seconds`` from now; 0: visible again at once.

    Unchecked when built: the SDK passes the caller's number on and the broker's 400 names it (as ever)."""

    invisible_seconds: Annotated[float, Meta(ge=0, le=MAX_INVISIBLE_SECONDS, description="hidden this long from now; 0: visible again at once")]


class SendResult(_Wire, omit_defaults=True):  # deliver_at_ms only on a timed message
    """Where one sent message was stored: its id, topic, queue, queue offset and commit-log offset."""

    status: SendStatus
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int  # -1 for a timed message: it takes its queue offset when it is due
    commit_log_offset: int
    deliver_at_ms: int | None = None  # set on a timed message: when it becomes visible
    recall_handle: str | None = None  # set on a timed message: what POST /v1/topics/{topic}/recall takes to cancel it


class RecallRequest(_Request):
    """POST /v1/topics/{topic}/recall: the handle a timed message's send answered."""

    recall_handle: Annotated[str, Meta(min_length=1, max_length=1024)]


class RecallResult(_Wire, omit_defaults=True):  # the broker writes duplicate only when true
    """A recalled timed message: it will never be delivered. ``duplicate``: it was recalled before (nothing written now)."""

    msg_id: str
    topic: str
    deliver_at_ms: int
    duplicate: bool = False


class SendResponse(_Wire, omit_defaults=True):  # the broker writes duplicate only when true (its one default)
    results: list[SendResult]
    duplicate: bool = False  # a numbered send's repeat, answered from the producer's window


class Message(_Wire):
    """A stored message as a consumer reads it; ``receipt_handle`` and ``delivery_attempt`` are set on a delivery only."""

    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    born_timestamp: int
    store_timestamp: int
    body: str
    body_encoding: BodyEncoding = "utf-8"
    keys: list[str] = []
    tag: str | None = None
    properties: dict[str, str] = {}
    receipt_handle: str | None = None
    delivery_attempt: int | None = None
    message_group: str | None = None
    deliver_at_ms: int | None = None  # a timed message's due time (TIMER_OUT_MS)


class MessageView(Message):
    """A ``Message`` as the broker writes it: ``receipt_handle`` and ``delivery_attempt`` only on a delivery,
    ``deliver_at_ms`` only on a timed message.

    Elsewhere (an offset read, a transaction's message, a dead letter) the two keys are not sent at all;
    the SDK reads them as ``None`` through ``Message``. The same fields, in the same order.
    """

    receipt_handle: str | None | UnsetType = UNSET  # type: ignore[assignment]
    delivery_attempt: int | None | UnsetType = UNSET  # type: ignore[assignment]
    message_group: str | None | UnsetType = UNSET  # type: ignore[assignment]  # sent only for a message of a group
    deliver_at_ms: int | None | UnsetType = UNSET  # type: ignore[assignment]  # a timed message's only


class OffsetReadResponse(_Wire, omit_defaults=True):  # the broker writes damaged_offsets only when some are (its one default)
    """A read of one queue by offset: the messages, where to read next, and the offsets of damaged records."""

    messages: list[Message]
    next_offset: int
    damaged_offsets: list[int] = []  # queue offsets in this range whose record is damaged (sent only when some are)


class ReceiveResponse(_Wire):
    messages: list[Message]


class SettleResult(_Wire):
    """One receipt handle's outcome in an ack or a nack."""

    receipt_handle: str
    status: SettleStatus


class SettleResponse(_Wire):
    results: list[SettleResult]
