"""What one outgoing message may hold, checked before anything is written or grows with it: every front's sends
(HTTP, gRPC, half messages, producer transactions) pass through these rules via ``SendService.prepare``.

Limits are counted in UTF-8 bytes (a 4 MiB limit counted in characters let 16.8 MB of emoji in) and keys are counted
before they are split or indexed (80k keys froze the broker for 42 s: issue 42).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable
from dataclasses import dataclass

from halfmq.broker.delivery.fifo_gate import MESSAGE_GROUP
from halfmq.broker.half_messages import record_names as tx_names
from halfmq.broker.half_messages.check_policy import immunity_seconds
from halfmq.broker.store.indexed_keys import KEY_SEPARATOR
from halfmq.broker.store.record import properties_size
from halfmq.broker.timers import routing
from halfmq.errors import (
    BadBodyEncoding,
    InvalidMessageGroup,
    InvalidProperty,
    InvalidRequest,
    PropertiesTooLarge,
    ReservedProperty,
    TooManyKeys,
)
from halfmq.wire import OutgoingMessage
from halfmq.wire.messages import message_group_conflict, message_group_problem


@dataclass(frozen=True)
class MessageLimits:
    """Bytes and keys one message may carry (HALFMQ_BROKER_MAX_MESSAGE_SIZE, _MAX_KEYS_PER_MESSAGE, _MAX_PROPERTIES_BYTES)."""

    max_message_size: int = 4 * 1024 * 1024  # body and properties
    max_keys_per_message: int = 64
    max_properties_bytes: int = 32 * 1024


# Properties only the broker may set: a producer forging them could impersonate a
# transaction, a retry or a DLQ entry.
RESERVED_PROPERTIES = frozenset({
    tx_names.TRAN_MSG, tx_names.REAL_TOPIC, tx_names.REAL_QID, tx_names.PRODUCER_GROUP, tx_names.CHECK_TIMES,
    "RECONSUME_TIME", "ORIGIN_MESSAGE_ID", "CONSUMER_GROUP", tx_names.TRANSACTION_ID, tx_names.HALF_PART, *routing.RESERVED,
    MESSAGE_GROUP,  # the message_group field is the one way in
})


def decode_body(msg: OutgoingMessage) -> bytes:
    if msg.body_encoding == "base64":
        try:
            return base64.b64decode(msg.body, validate=True)
        except (binascii.Error, ValueError):
            raise BadBodyEncoding("body_encoding is base64 but the body is not valid base64") from None
    try:
        return msg.body.encode("utf-8")
    except UnicodeEncodeError:
        raise BadBodyEncoding("the body is not valid UTF-8 text (lone surrogates?)") from None


def check_property_text(msg: OutgoingMessage) -> None:
    """Properties are stored RocketMQ-style (name \\x01 value \\x02): a separator inside a name or
    value would let a producer forge properties, so those two control characters are refused."""
    keys = [msg.keys] if isinstance(msg.keys, str) else msg.keys or []
    for text in (*keys, msg.tag or "", *msg.properties.keys(), *msg.properties.values()):
        if "\x01" in text or "\x02" in text:
            raise InvalidRequest("keys, tag and properties must not contain the control characters \\u0001 or \\u0002")
    if any(not name for name in msg.properties):
        raise InvalidRequest("property names must not be empty")


_UNIQ_KEY = re.compile(r"[!-~]{1,128}", re.ASCII)


def uniq_key(text: str) -> str:
    """A producer's own message id: 1-128 visible ASCII characters (RocketMQ's are 32 hex digits, uuids fit too).

    It becomes the msg_id consumers deduplicate by and that logs and views show.
    """
    if not _UNIQ_KEY.fullmatch(text):
        raise ValueError(f"1 to 128 visible ASCII characters, not {text[:40]!r}")
    return text


# Properties producers may set that the broker reads: a value it cannot use is refused at send time,
# never found later by a view or the check service.
INTERPRETED_PROPERTIES: dict[str, Callable[[str], object]] = {
    "UNIQ_KEY": uniq_key,
    "CHECK_IMMUNITY_TIME_IN_SECONDS": immunity_seconds,
}


def check_interpreted_properties(properties: dict[str, str]) -> None:
    for name in INTERPRETED_PROPERTIES.keys() & properties.keys():
        try:
            INTERPRETED_PROPERTIES[name](properties[name])
        except ValueError as exc:
            raise InvalidProperty(f"property {name} must be {exc}", property=name) from None


def own_uniq_key(msg: OutgoingMessage) -> str | None:
    """The producer's UNIQ_KEY when it is the message's only property and valid, else None (the general path decides).

    The SDK sets UNIQ_KEY on every message; the general path's checks (separators,
    reserved names, interpreted values) all pass for one valid UNIQ_KEY, so it can skip them.
    """
    props = msg.properties
    if len(props) != 1:
        return None
    key = props.get("UNIQ_KEY")
    return key if key is not None and _UNIQ_KEY.fullmatch(key) else None


def properties_bytes(props: dict[str, str]) -> int:
    """What ``props`` take in a record, in bytes (UTF-8, with a separator after each name and value)."""
    try:
        return properties_size(props)
    except UnicodeEncodeError:
        raise InvalidRequest("keys, tag and properties must be valid UTF-8 text (lone surrogates?)") from None


def checked_keys(keys: list[str] | str, limits: MessageLimits) -> str:
    """A message's keys as its KEYS property (space-separated, as RocketMQ writes it), within the limits.

    Checked before anything grows with them: the bytes first, then the count (each key is one key-index entry)."""
    joined = keys if isinstance(keys, str) else " ".join(keys)
    try:
        size = len(joined.encode())
    except UnicodeEncodeError:
        raise InvalidRequest("keys must be valid UTF-8 text (lone surrogates?)") from None
    if size > limits.max_properties_bytes:
        raise PropertiesTooLarge(f"the keys take {size} bytes; a message's keys, tag and properties take at most "
                                 f"{limits.max_properties_bytes}", limit=limits.max_properties_bytes)
    count = len(set(joined.split(KEY_SEPARATOR)) - {""})
    if count > limits.max_keys_per_message:
        raise TooManyKeys(f"the message has {count} keys; at most {limits.max_keys_per_message}",
                          limit=limits.max_keys_per_message)
    return joined


def message_properties(msg: OutgoingMessage, new_key: Callable[[], str], limits: MessageLimits) -> dict[str, str]:
    if not (msg.properties or msg.keys or msg.tag):  # the common case: nothing to check
        return {"UNIQ_KEY": new_key()}
    if not (msg.keys or msg.tag):
        key = own_uniq_key(msg)
        if key is not None:  # the SDK's case: its own id and nothing else
            return {"UNIQ_KEY": key}
    keys = checked_keys(msg.keys, limits) if msg.keys else None
    check_property_text(msg)
    bad = RESERVED_PROPERTIES.intersection(msg.properties)
    if bad:
        raise ReservedProperty(f"properties {sorted(bad)} are reserved for the broker")
    check_interpreted_properties(msg.properties)
    props = dict(msg.properties)
    if keys:
        props["KEYS"] = keys
    if msg.tag:
        props["TAGS"] = msg.tag
    if "UNIQ_KEY" not in props:
        props["UNIQ_KEY"] = new_key()
    return props


def checked_message_group(msg: OutgoingMessage) -> str:
    """A message's group, INVALID_MESSAGE_GROUP unless 1-64 bytes without control characters (RocketMQ's proxy rule),
    INVALID_REQUEST with a queue_id or another sharding_key (the group picks its queue)."""
    group = msg.message_group
    assert group is not None
    problem = message_group_problem(group)
    if problem:
        raise InvalidMessageGroup(problem)
    conflict = message_group_conflict(group, msg.sharding_key, msg.queue_id)
    if conflict:
        raise InvalidRequest(conflict)
    return group
