"""The wire's vocabulary: limits, enums, the two struct bases, and decoding/encoding helpers."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Any, Literal, TypeVar

import msgspec

MAX_BATCH = 1000
MAX_RECEIVE = 256
MAX_INVISIBLE_SECONDS = 12 * 3600
MAX_WAIT_SECONDS = 30
MAX_TAG_LENGTH = 255  # characters of a tag (a label, at most 1,020 bytes; it counts in bytes toward the broker's MAX_PROPERTIES_BYTES)
MAX_NACK_REASON = 256  # characters of a nack's reason the broker keeps in the message's journey (at most 1 KiB)
MAX_HALF_COMPANIONS = 16  # a half send's ``also``: messages decided by the same local transaction

MAX_NAME_LENGTH = 127
NAME_RULE = f"use 1-{MAX_NAME_LENGTH} of A-Z a-z 0-9 _ -"
_NAME = re.compile(r"[A-Za-z0-9_-]{1,127}", re.ASCII)


def is_valid_name(name: object) -> bool:
    """The one rule for a name a client chooses (topic, group, transactional id), shared so the SDK refuses a name at
    the call site with the broker's own words (``halfmq.broker.messages.names`` explains the rule)."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


BodyEncoding = Literal["utf-8", "base64"]
_ENCODINGS = ("utf-8", "base64")

W = TypeVar("W")


def utf8_size(text: str) -> int:
    """``text``'s size in UTF-8 bytes, what a byte limit counts (a lone surrogate as 3); ASCII without encoding it."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


class SendStatus(str, Enum):
    """How durable a sent message is (RocketMQ's names): ``SEND_OK`` once on disk (and, in a broker set, on its replicas)."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


class SettleStatus(str, Enum):
    """An ack's or nack's outcome per receipt handle: ``OK``, or ``EXPIRED`` (the delivery timed out or was settled)."""

    OK = "OK"
    EXPIRED = "EXPIRED"


class TransactionState(str, Enum):
    """A transaction's state: the broker's state machine moves it, GET /v1/transactions?state= filters on it."""

    PENDING = "pending"
    COMMITTED = "committed"
    ROLLED_BACK = "rolled_back"
    DISCARDED = "discarded"


EndState = Literal["commit", "rollback", "unknown"]  # an end request's state, and a check-back's answer


# The requests' bounds, as msgspec checks them when the broker decodes a body (a Python constructor does not: a
# request's __post_init__ checks there what the SDK could get wrong).
NonNegative = Annotated[int, msgspec.Meta(ge=0)]
GroupName = Annotated[str, msgspec.Meta(min_length=1, max_length=255)]  # a producer group, a client id, a transaction id


class _Wire(msgspec.Struct, kw_only=True):
    """An answer from the broker: fields a newer broker adds are ignored, so an older SDK keeps working."""


class _Request(_Wire, forbid_unknown_fields=True):
    """A request body: what the SDK sends and what the broker decodes (a misspelt field is a mistake either side)."""


# What the broker answers and the SDK does not decode as a whole (the operators' views, health, batches) is
# written in this package all the same: the broker's OpenAPI document takes its answer schemas from it.

SCHEMA_REF = "#/components/schemas/{name}"  # where the OpenAPI document puts a struct's schema


def one_of(*shapes: type) -> msgspec.Meta:
    """An object that is one of several untagged structs (read by hand: msgspec cannot tell them apart), as documented."""
    return msgspec.Meta(extra_json_schema={"anyOf": [{"$ref": SCHEMA_REF.format(name=s.__name__)} for s in shapes]})


def decode(data: Any, shape: type[W]) -> W:
    """``data`` (decoded JSON) as ``shape``; a ``ValueError`` naming the field if it does not fit."""
    try:
        return msgspec.convert(data, shape)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc)) from None


def to_wire(value: msgspec.Struct) -> Any:
    """``value`` as JSON-ready builtins (an ``OutgoingMessage`` leaves out what it left at its default)."""
    return msgspec.to_builtins(value)
