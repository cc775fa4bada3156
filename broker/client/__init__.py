"""Python SDK for the halfmq broker (DESIGN section 7).

Services talk to the broker only through this package, over HTTP, exactly as
a stranger would; the wire models and error types are re-exported here so
they need nothing else from ``broker``.
"""

from broker.errors import BrokerError, BrokerUnavailable
from broker.protocol import (
    ConsumerGroupInfo,
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
from .consumer import Consumer
from .consumer_client import AsyncConsumerClient, ConsumerClient
from .messages import UNIQ_KEY, message_body_bytes, message_json
from .producer import AsyncProducer, Producer

__all__ = [
    "UNIQ_KEY",
    "AsyncConsumer",
    "AsyncConsumerClient",
    "AsyncProducer",
    "BrokerError",
    "BrokerUnavailable",
    "Consumer",
    "ConsumerClient",
    "ConsumerGroupInfo",
    "Message",
    "OffsetReadResponse",
    "OutgoingMessage",
    "Producer",
    "SendResult",
    "SendStatus",
    "SettleResult",
    "SettleStatus",
    "TopicInfo",
    "message_body_bytes",
    "message_json",
]
