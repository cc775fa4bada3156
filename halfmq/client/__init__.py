"""Python SDK for the halfmq broker (DESIGN section 7).

Services talk to the broker only through this package, over HTTP, exactly as
a stranger would; the wire models and error types are re-exported here so
they need nothing else from ``broker``. Names load on first use (PEP 562), so
``from halfmq.client import Producer`` loads the producer and not the
consumers or the check app.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what mypy sees; each `import X as X` re-exports X under --strict (no_implicit_reexport)
    from halfmq.client.admin import AdminClient as AdminClient
    from halfmq.client.admin import AsyncAdminClient as AsyncAdminClient
    from halfmq.client.async_transaction_producer import AsyncTransactionProducer as AsyncTransactionProducer
    from halfmq.client.check_app import CheckApp as CheckApp
    from halfmq.client.consumer import AsyncConsumer as AsyncConsumer
    from halfmq.client.consumer import Consumer as Consumer
    from halfmq.client.half_message_steps import TransactionSendResult as TransactionSendResult
    from halfmq.client.listener import AsyncTransactionListener as AsyncTransactionListener
    from halfmq.client.listener import LocalTransactionState as LocalTransactionState
    from halfmq.client.listener import TransactionListener as TransactionListener
    from halfmq.client.messages import UNIQ_KEY as UNIQ_KEY
    from halfmq.client.messages import message_body_bytes as message_body_bytes
    from halfmq.client.messages import message_json as message_json
    from halfmq.client.messages import outgoing as outgoing
    from halfmq.client.producer import AsyncProducer as AsyncProducer
    from halfmq.client.producer import Producer as Producer
    from halfmq.client.send_options import SendOptions as SendOptions
    from halfmq.client.simple_consumer import AsyncSimpleConsumer as AsyncSimpleConsumer
    from halfmq.client.simple_consumer import SimpleConsumer as SimpleConsumer
    from halfmq.client.transaction_producer import TransactionProducer as TransactionProducer
    from halfmq.errors import AccessDenied as AccessDenied
    from halfmq.errors import AmbiguousMessageId as AmbiguousMessageId
    from halfmq.errors import BrokerError as BrokerError
    from halfmq.errors import BrokerUnavailable as BrokerUnavailable
    from halfmq.errors import CheckUrlRefused as CheckUrlRefused
    from halfmq.errors import ConsumerGroupNotFound as ConsumerGroupNotFound
    from halfmq.errors import InvalidRecallHandle as InvalidRecallHandle
    from halfmq.errors import InvalidRequest as InvalidRequest
    from halfmq.errors import InvalidTopicName as InvalidTopicName
    from halfmq.errors import InvalidTxnState as InvalidTxnState
    from halfmq.errors import MessageNotFound as MessageNotFound
    from halfmq.errors import MessageTooLarge as MessageTooLarge
    from halfmq.errors import NotLeader as NotLeader
    from halfmq.errors import ProducerFenced as ProducerFenced
    from halfmq.errors import RecallTooLate as RecallTooLate
    from halfmq.errors import TopicNotFound as TopicNotFound
    from halfmq.errors import TransactionAborted as TransactionAborted
    from halfmq.errors import TransactionNotFound as TransactionNotFound
    from halfmq.errors import Unauthenticated as Unauthenticated
    from halfmq.wire import CheckRequest as CheckRequest
    from halfmq.wire import ConsumerGroupInfo as ConsumerGroupInfo
    from halfmq.wire import HalfSendResult as HalfSendResult
    from halfmq.wire import JourneyEventKind as JourneyEventKind
    from halfmq.wire import Message as Message
    from halfmq.wire import MessageJourney as MessageJourney
    from halfmq.wire import MessageSummary as MessageSummary
    from halfmq.wire import OffsetReadResponse as OffsetReadResponse
    from halfmq.wire import OutgoingMessage as OutgoingMessage
    from halfmq.wire import RecallResult as RecallResult
    from halfmq.wire import SendResult as SendResult
    from halfmq.wire import SendStatus as SendStatus
    from halfmq.wire import SettleResult as SettleResult
    from halfmq.wire import SettleStatus as SettleStatus
    from halfmq.wire import TopicInfo as TopicInfo
    from halfmq.wire import TxnEndResult as TxnEndResult
    from halfmq.wire import TxnSendResult as TxnSendResult

_HOMES = {name: module for module, names in {  # the public names at run time, by the module that defines them
    "halfmq.client.admin": "AdminClient AsyncAdminClient",
    "halfmq.client.async_transaction_producer": "AsyncTransactionProducer",
    "halfmq.client.check_app": "CheckApp",
    "halfmq.client.consumer": "AsyncConsumer Consumer",
    "halfmq.client.listener": "AsyncTransactionListener LocalTransactionState TransactionListener",
    "halfmq.client.messages": "UNIQ_KEY message_body_bytes message_json outgoing",
    "halfmq.client.producer": "AsyncProducer Producer",
    "halfmq.client.send_options": "SendOptions",
    "halfmq.client.simple_consumer": "AsyncSimpleConsumer SimpleConsumer",
    "halfmq.client.transaction_producer": "TransactionProducer",
    "halfmq.client.half_message_steps": "TransactionSendResult",
    "halfmq.errors": "AccessDenied AmbiguousMessageId BrokerError BrokerUnavailable CheckUrlRefused ConsumerGroupNotFound"
                     " InvalidRecallHandle InvalidRequest InvalidTopicName InvalidTxnState MessageNotFound MessageTooLarge NotLeader"
                     " ProducerFenced RecallTooLate TopicNotFound TransactionAborted TransactionNotFound Unauthenticated",
    "halfmq.wire": "CheckRequest ConsumerGroupInfo HalfSendResult JourneyEventKind Message MessageJourney MessageSummary OffsetReadResponse"
                   " OutgoingMessage RecallResult SendResult SendStatus SettleResult SettleStatus TopicInfo TxnEndResult TxnSendResult",
}.items() for name in names.split()}
if not TYPE_CHECKING:  # mypy reads only a literal __all__ (this one would hide the names above from `from halfmq.client import *`)
    __all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'halfmq.client' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(_HOMES)
