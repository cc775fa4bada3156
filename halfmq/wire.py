"""What the broker answers, and what the SDK sends, as msgspec structs.

This is the SDK's half of HTTP API v1 (DESIGN.md section 6): ``pip install halfmq`` must stay
small and quick to import, and pydantic (two packages, ~10 MB, most of the SDK's import time)
was only ever used here to read the broker's answers. msgspec checks the same shapes when it
decodes them, for a fraction of the cost. The broker validates requests with its own pydantic
models in ``halfmq.broker.protocol``, built from the limits below; a unit test keeps the two
spellings of a request (``OutgoingMessage``, ``ReceiveRequest``) field for field the same.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal, TypeVar

import msgspec

__all__ = [
    "MAX_BATCH", "MAX_INVISIBLE_SECONDS", "MAX_RECEIVE", "MAX_TAG_LENGTH", "MAX_WAIT_SECONDS",
    "CheckRequest", "ConsumerGroupInfo", "ProducerIdResult", "EndState", "TransactionState", "GroupQueueState", "GroupTopicState", "HalfSendResult", "Message",
    "OffsetReadResponse", "OutgoingMessage", "QueueInfo", "ReceiveRequest", "ReceiveResponse", "SendResponse",
    "SendResult", "SendStatus", "SettleResponse", "SettleResult", "SettleStatus", "TopicInfo", "TopicList",
    "decode", "to_wire",
    "DeadLetters", "DlqResent", "EndBatchResponse", "FinalMessage", "GroupList", "GroupSummary", "HalfBatchResponse",
    "Health", "HeartbeatResult", "ItemProblem", "OpenTransaction", "ProducerEntry", "ProducerGroup", "ProducerList",
    "SCHEMA_REF", "TransactionList", "TransactionView", "TransactionalIdList", "TransactionalIdView", "one_of",
    "TxnAcksResult", "TxnBeginResult", "TxnEndResult", "TxnInitResult", "TxnMessage", "TxnMessagesResult", "TxnSendResult",
]

MAX_BATCH = 1000
MAX_RECEIVE = 256
MAX_INVISIBLE_SECONDS = 12 * 3600
MAX_WAIT_SECONDS = 30
MAX_TAG_LENGTH = 255

BodyEncoding = Literal["utf-8", "base64"]
_ENCODINGS = ("utf-8", "base64")

W = TypeVar("W")


class SendStatus(str, Enum):
    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


class SettleStatus(str, Enum):
    OK = "OK"
    EXPIRED = "EXPIRED"


class TransactionState(str, Enum):
    """A transaction's state: the broker's state machine moves it, GET /v1/transactions?state= filters on it."""

    PENDING = "pending"
    COMMITTED = "committed"
    ROLLED_BACK = "rolled_back"
    DISCARDED = "discarded"


EndState = Literal["commit", "rollback", "unknown"]  # an end request's state, and a check-back's answer


class _Wire(msgspec.Struct, kw_only=True):
    """An answer from the broker: fields a newer broker adds are ignored, so an older SDK keeps working."""


class _Request(_Wire, forbid_unknown_fields=True):
    """What the SDK sends: a misspelt field is a mistake, found where the struct is built."""


class OutgoingMessage(_Request, omit_defaults=True):
    """A message to send; checked when built, so a mistake shows at the line that made it."""

    body: str
    body_encoding: BodyEncoding = "utf-8"
    keys: list[str] | str | None = None
    tag: str | None = None
    properties: dict[str, str] = {}
    queue_id: int | None = None
    sharding_key: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.body, str):
            raise TypeError(f"body must be str (bytes go through send(topic, b'...')), not {type(self.body).__name__}")
        if self.body_encoding not in _ENCODINGS:
            raise ValueError(f"body_encoding must be one of {_ENCODINGS}, not {self.body_encoding!r}")
        if self.tag is not None and len(self.tag) > MAX_TAG_LENGTH:
            raise ValueError(f"tag is {len(self.tag)} characters; at most {MAX_TAG_LENGTH}")
        if self.queue_id is not None and self.queue_id < 0:
            raise ValueError(f"queue_id must be >= 0, not {self.queue_id}")


class ReceiveRequest(_Request):
    max_messages: int = 16
    invisible_seconds: float = 30.0
    wait_seconds: float = 0.0

    def __post_init__(self) -> None:
        if not 1 <= self.max_messages <= MAX_RECEIVE:
            raise ValueError(f"max_messages must be 1..{MAX_RECEIVE}, not {self.max_messages}")
        if not 0 < self.invisible_seconds <= MAX_INVISIBLE_SECONDS:
            raise ValueError(f"invisible_seconds must be > 0 and <= {MAX_INVISIBLE_SECONDS}, not {self.invisible_seconds}")
        if not 0 <= self.wait_seconds <= MAX_WAIT_SECONDS:
            raise ValueError(f"wait_seconds must be 0..{MAX_WAIT_SECONDS}, not {self.wait_seconds}")


class SendResult(_Wire):
    status: SendStatus
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


class SendResponse(_Wire):
    results: list[SendResult]
    duplicate: bool = False  # a numbered send's repeat, answered from the producer's window


class Message(_Wire):
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


class QueueInfo(_Wire):
    queue_id: int
    min_offset: int
    max_offset: int


class TopicInfo(_Wire):
    name: str
    queues: list[QueueInfo]


class TopicList(_Wire):
    topics: list[TopicInfo]


class OffsetReadResponse(_Wire):
    messages: list[Message]
    next_offset: int
    damaged_offsets: list[int] = []  # queue offsets in this range whose record is damaged (sent only when some are)


class ReceiveResponse(_Wire):
    messages: list[Message]


class SettleResult(_Wire):
    receipt_handle: str
    status: SettleStatus


class SettleResponse(_Wire):
    results: list[SettleResult]


class GroupQueueState(_Wire):
    queue_id: int
    committed_offset: int
    max_offset: int
    lag: int
    in_flight: int


class GroupTopicState(_Wire):
    topic: str
    queues: list[GroupQueueState]


class ConsumerGroupInfo(_Wire):
    group: str
    topics: list[GroupTopicState]


class HalfSendResult(_Wire):
    status: SendStatus
    transaction_id: str
    msg_id: str
    commit_log_offset: int
    queue_offset: int
    duplicate: bool = False


class CheckRequest(_Wire):
    transaction_id: str
    producer_group: str
    check_times: int
    message: Message


# Producer transactions (Kafka semantics, DESIGN section 11)


class TxnMessage(OutgoingMessage, kw_only=True, omit_defaults=True):
    """A message inside a producer transaction: each names its own topic."""

    topic: str


class ProducerIdResult(_Wire):
    """POST /v1/producer-ids: an idempotent producer id without a transactional id."""

    producer_id: int
    epoch: int


class TxnInitResult(_Wire):
    transactional_id: str
    producer_id: int
    epoch: int
    transaction_timeout_ms: int


class TxnBeginResult(_Wire):
    transactional_id: str
    transaction: int
    state: str


class TxnSendResult(_Wire):
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int | None = None  # known once committed
    commit_log_offset: int | None = None


class TxnMessagesResult(_Wire):
    sequence: int
    messages: int
    results: list[TxnSendResult]
    duplicate: bool = False


class TxnAcksResult(_Wire):
    sequence: int
    acks: int
    duplicate: bool = False


class TxnEndResult(_Wire):
    transactional_id: str
    producer_id: int
    epoch: int
    transaction: int
    state: str  # COMPLETE_COMMIT or COMPLETE_ABORT
    messages: int
    acks: int
    results: list[TxnSendResult] = []
    aborted_by: str | None = None
    duplicate: bool = False


# What the broker answers and the SDK does not decode as a whole: the operators' views, health, batches.
# Written here once all the same: the broker's OpenAPI document takes its answer schemas from this module.

SCHEMA_REF = "#/components/schemas/{name}"  # where the OpenAPI document puts a struct's schema


def one_of(*shapes: type) -> msgspec.Meta:
    """An object that is one of several untagged structs (read by hand: msgspec cannot tell them apart), as documented."""
    return msgspec.Meta(extra_json_schema={"anyOf": [{"$ref": SCHEMA_REF.format(name=s.__name__)} for s in shapes]})


class ItemProblem(_Wire):
    """One batch item's failure: the problem+json the single route would have answered (stable ``code``)."""

    problem: dict[str, Any]


class FinalMessage(_Wire):
    """Where a committed half message's transaction delivered it."""

    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


class TransactionView(_Wire, kw_only=True):
    transaction_id: str
    producer_group: str
    state: TransactionState
    check_times: int
    born_timestamp: int
    age_seconds: float
    last_answer: str | None = None
    last_check_timestamp: int | None = None
    next_check_timestamp: int | None = None
    resolved_timestamp: int | None = None
    final: FinalMessage | None = None
    message: Message
    duplicate: bool = False


class TransactionList(_Wire):
    state: TransactionState
    count: int
    transactions: list[TransactionView]


class HalfBatchResponse(_Wire):
    """Per item, in request order: its half send's answer, or ``{"problem": ...}``."""

    results: list[Annotated[dict[str, Any], one_of(HalfSendResult, ItemProblem)]]


class EndBatchResponse(_Wire):
    """Per item, in request order: the transaction's view after its end, or ``{"problem": ...}``."""

    results: list[Annotated[dict[str, Any], one_of(TransactionView, ItemProblem)]]


class GroupSummary(_Wire):
    group: str
    topics: list[str]
    lag: int
    in_flight: int
    retrying: int
    dlq_depth: int


class GroupList(_Wire):
    count: int
    groups: list[GroupSummary]


class DeadLetters(_Wire):
    group: str
    depth: int
    messages: list[Message]


class DlqResent(_Wire):
    group: str
    dlq_offset: int
    msg_id: str
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int


class ProducerEntry(_Wire):
    client_id: str
    check_url: str | None = None


class ProducerGroup(_Wire):
    producer_group: str
    producers: list[ProducerEntry]


class ProducerList(_Wire):
    groups: list[ProducerGroup]


class HeartbeatResult(_Wire):
    producer_group: str
    client_id: str
    expires_in: float


class OpenTransaction(_Wire):
    transaction: int
    age_seconds: float
    deadline_timestamp: int
    messages: int
    acks: int


class TransactionalIdView(_Wire):
    transactional_id: str
    producer_id: int
    epoch: int
    state: str
    transaction_timeout_ms: int
    transaction: int
    open: OpenTransaction | None = None
    aborted_by: str | None = None


class TransactionalIdList(_Wire):
    count: int
    transactional_ids: list[TransactionalIdView]


class Health(_Wire):
    status: str
    commit_log_end_offset: int
    flushed_offset: int
    flush_mode: str | None = None
    topics: int | None = None
    store_problem: str | None = None
    recovery_seconds: float | None = None


def decode(data: Any, shape: type[W]) -> W:
    """``data`` (decoded JSON) as ``shape``; a ``ValueError`` naming the field if it does not fit."""
    try:
        return msgspec.convert(data, shape)
    except msgspec.ValidationError as exc:
        raise ValueError(str(exc)) from None


def to_wire(value: msgspec.Struct) -> Any:
    """``value`` as JSON-ready builtins (an ``OutgoingMessage`` leaves out what it left at its default)."""
    return msgspec.to_builtins(value)
