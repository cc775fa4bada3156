"""What the broker answers, and what the SDK sends, as msgspec structs.

This is the SDK's half of HTTP API v1 (DESIGN.md section 6): ``pip install halfmq`` must stay
small and quick to import, and pydantic (two packages, ~10 MB, most of the SDK's import time)
was only ever used here to read the broker's answers. msgspec checks the same shapes when it
decodes them, for a fraction of the cost. Each request is spelled once, here: the SDK builds it,
the broker decodes its body with it (the bounds are ``msgspec.Meta`` on the fields), and the
broker's OpenAPI document takes its schema from it.

One module per concern, every name imported from here (``from halfmq.wire import X``):
``base`` (limits, enums, the struct bases, ``decode``/``to_wire``, ``one_of``), ``messages``
(send, receive, settle), ``transactions`` (RocketMQ half messages, check-backs, the batches),
``producer_transactions`` (Kafka-style transactions, producer ids), ``views`` (the operators'
views: topics, groups, dead letters, producers, health), ``journeys`` (where is my message) and ``cluster`` (a broker set's view and
replication answers). Where the broker writes a key only sometimes, the struct says how: its one
default omitted (``omit_defaults``), ``msgspec.UNSET``, or a broker-side subclass (``MessageView``,
``TxnAddedResult``) that leaves out what the SDK reads as ``None``.
"""

from __future__ import annotations

from halfmq.wire.base import (
    MAX_BATCH,
    MAX_HALF_COMPANIONS,
    MAX_INVISIBLE_SECONDS,
    MAX_NACK_REASON,
    MAX_RECEIVE,
    MAX_TAG_LENGTH,
    MAX_WAIT_SECONDS,
    SCHEMA_REF,
    EndState,
    GroupName,
    NonNegative,
    SendStatus,
    SettleStatus,
    TransactionState,
    decode,
    one_of,
    to_wire,
)
from halfmq.wire.cluster import ClusterMember, ClusterView, FetchRequest, LastFailover, Position, TermEnd
from halfmq.wire.journeys import JourneyEvent, JourneyEventKind, MessageJourney, MessageSearch, MessageSummary
from halfmq.wire.messages import (
    ChangeInvisibleRequest,
    Message,
    MessageView,
    NackRequest,
    OffsetReadResponse,
    OutgoingMessage,
    RecallRequest,
    RecallResult,
    ReceiveRequest,
    ReceiveResponse,
    SendRequest,
    SendResponse,
    SendResult,
    SettleRequest,
    SettleResponse,
    SettleResult,
    subscription_tags,
)
from halfmq.wire.producer_transactions import (
    BeginTxnRequest,
    EndTxnRequest,
    InitProducer,
    NewProducerId,
    OpenTransaction,
    ProducerIdResult,
    TransactionalIdList,
    TransactionalIdView,
    TxnAcksRequest,
    TxnAcksResult,
    TxnAddedResult,
    TxnBeginResult,
    TxnEndResult,
    TxnInitResult,
    TxnMessage,
    TxnMessagesRequest,
    TxnMessagesResult,
    TxnSendResult,
)
from halfmq.wire.transactions import (
    CheckRequest,
    EndBatchRequest,
    EndBatchResponse,
    EndItem,
    EndRequest,
    FinalMessage,
    HalfBatchRequest,
    HalfBatchResponse,
    HalfSendRequest,
    HalfSendResult,
    Heartbeat,
    ItemProblem,
    TransactionList,
    TransactionView,
)
from halfmq.wire.views import (
    ConsumerGroupInfo,
    DeadLetters,
    DlqPage,
    DlqRedrive,
    DlqRedriveRequest,
    DlqResent,
    GroupDeleted,
    GroupList,
    GroupQueueState,
    GroupSummary,
    GroupTopicState,
    Health,
    HeartbeatResult,
    OffsetReset,
    ProducerEntry,
    ProducerGroup,
    ProducerList,
    QueueInfo,
    QueueReset,
    ResetOffsetsRequest,
    TopicAlter,
    TopicCreate,
    TopicDeleted,
    TopicInfo,
    TopicList,
)

__all__ = [
    "MAX_BATCH", "MAX_HALF_COMPANIONS", "MAX_INVISIBLE_SECONDS", "MAX_NACK_REASON", "MAX_RECEIVE", "MAX_TAG_LENGTH",
    "MAX_WAIT_SECONDS",
    "CheckRequest", "ConsumerGroupInfo", "ProducerIdResult", "EndState", "TransactionState", "GroupQueueState", "GroupTopicState", "HalfSendResult", "Message",
    "MessageView", "OffsetReadResponse", "OutgoingMessage", "QueueInfo", "ReceiveRequest", "ReceiveResponse", "RecallRequest", "RecallResult", "SendResponse",
    "SendResult", "SendStatus", "SettleResponse", "SettleResult", "SettleStatus", "TopicInfo", "TopicList", "subscription_tags",
    "decode", "to_wire",
    "DeadLetters", "DlqPage", "DlqRedrive", "DlqResent", "OffsetReset", "QueueReset",
    "EndBatchResponse", "FinalMessage", "GroupDeleted", "TopicDeleted", "GroupList", "GroupSummary", "HalfBatchResponse",
    "Health", "HeartbeatResult", "ItemProblem", "OpenTransaction", "ProducerEntry", "ProducerGroup", "ProducerList",
    "SCHEMA_REF", "TransactionList", "TransactionView", "TransactionalIdList", "TransactionalIdView", "one_of",
    "ClusterMember", "ClusterView", "LastFailover", "Position", "TermEnd",
    "JourneyEvent", "JourneyEventKind", "MessageJourney", "MessageSearch", "MessageSummary",
    "BeginTxnRequest", "EndBatchRequest", "EndItem", "EndRequest", "EndTxnRequest", "FetchRequest",
    "GroupName", "HalfBatchRequest", "HalfSendRequest", "Heartbeat", "InitProducer", "NackRequest", "NewProducerId",
    "ChangeInvisibleRequest", "DlqRedriveRequest", "ResetOffsetsRequest",
    "NonNegative", "SendRequest", "SettleRequest", "TopicAlter", "TopicCreate", "TxnAcksRequest", "TxnMessagesRequest",
    "TxnAcksResult", "TxnAddedResult", "TxnBeginResult", "TxnEndResult", "TxnInitResult", "TxnMessage", "TxnMessagesResult", "TxnSendResult",
]
