"""Python SDK for the halfmq broker (DESIGN section 7).

Services talk to the broker only through this package, over HTTP, exactly as
a stranger would; the wire models and error types are re-exported here so
they need nothing else from ``broker``.
"""

from halfmq.broker.errors import BrokerError, BrokerUnavailable, CheckUrlRefused
from halfmq.broker.protocol import (
    CheckRequest,
    ConsumerGroupInfo,
    HalfSendResult,
    Message,
    OffsetReadResponse,
    OutgoingMessage,
    SendResult,
    SendStatus,
    SettleResult,
    SettleStatus,
    TopicInfo,
)

from .async_consumer import AsyncConsumer
from .async_transaction_producer import AsyncTransactionProducer
from .check_app import CheckApp
from .consumer import Consumer
from .consumer_client import AsyncConsumerClient, ConsumerClient
from .messages import UNIQ_KEY, message_body_bytes, message_json
from .producer import AsyncProducer, Producer
from .send_options import SendOptions
from .transaction import (
    AsyncTransactionListener,
    LocalTransactionState,
    TransactionListener,
    TransactionSendResult,
)
from .transaction_producer import TransactionProducer

__all__ = [
    "UNIQ_KEY",
    "AsyncConsumer",
    "AsyncConsumerClient",
    "AsyncProducer",
    "AsyncTransactionListener",
    "AsyncTransactionProducer",
    "BrokerError",
    "BrokerUnavailable",
    "CheckApp",
    "CheckRequest",
    "CheckUrlRefused",
    "Consumer",
    "ConsumerClient",
    "ConsumerGroupInfo",
    "HalfSendResult",
    "LocalTransactionState",
    "Message",
    "OffsetReadResponse",
    "OutgoingMessage",
    "Producer",
    "SendOptions",
    "SendResult",
    "SendStatus",
    "SettleResult",
    "SettleStatus",
    "TopicInfo",
    "TransactionListener",
    "TransactionProducer",
    "TransactionSendResult",
    "message_body_bytes",
    "message_json",
]
