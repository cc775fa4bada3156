"""Transactional messages on the producer side: the types RocketMQ users know.

A transaction is three steps (DESIGN section 4): a *half* message the broker
stores but no consumer sees, the producer's *local transaction* (its own
database write), and an *end* that commits the message (it becomes visible on
its real topic) or rolls it back. When the end never arrives, the broker asks
the producer through its check-back endpoint (``check_app``), and the
listener's ``check_local_transaction`` answers from the producer's own records.

Everything here is free of I/O so the blocking and asyncio producers share it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any, Protocol, TypeVar, runtime_checkable

import msgspec

from halfmq.errors import BrokerError
from halfmq.wire import HalfSendResult, Message, OutgoingMessage, SendStatus

__all__ = [
    "AsyncTransactionListener",
    "LocalTransactionState",
    "TransactionListener",
    "TransactionSendResult",
    "call_listener",
    "coerce_local_state",
    "listener_message",
    "state_after_half",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class LocalTransactionState(str, Enum):
    """The outcome of a local transaction, in RocketMQ's names, as the broker's end states.

    ``UNKNOW`` is RocketMQ's spelling; ``UNKNOWN`` is an alias of the same member.
    """

    COMMIT_MESSAGE = "commit"
    ROLLBACK_MESSAGE = "rollback"
    UNKNOW = "unknown"
    UNKNOWN = "unknown"  # alias: LocalTransactionState.UNKNOWN is LocalTransactionState.UNKNOW


@runtime_checkable
class TransactionListener(Protocol):
    """RocketMQ's TransactionListener, for ``TransactionProducer`` (methods run in threads).

    ``execute_local_transaction`` runs once the half message is stored; ``msg``
    is the message as sent plus the ``TRANSACTION_ID``, ``TRAN_MSG`` and
    ``PGROUP`` properties (RocketMQ sets the same before calling it), and
    ``arg`` is what the caller passed to ``send_in_transaction``. Raising an
    ``Exception`` rolls the message back; returning ``UNKNOW`` (or ``None``)
    leaves it to the check-back.

    ``check_local_transaction`` answers the broker's check-back for a
    transaction whose end never arrived: ``msg`` is the message on its real
    topic and queue, with the ``TRANSACTION_ID`` property. It must answer from
    durable records (was the business change committed?), never from memory
    of the ``execute_local_transaction`` call, which may have run in a process
    that has since died.
    """

    def execute_local_transaction(self, msg: OutgoingMessage, arg: Any) -> LocalTransactionState: ...

    def check_local_transaction(self, msg: Message) -> LocalTransactionState: ...


@runtime_checkable
class AsyncTransactionListener(Protocol):
    """``TransactionListener`` with coroutine methods, for ``AsyncTransactionProducer``."""

    async def execute_local_transaction(self, msg: OutgoingMessage, arg: Any) -> LocalTransactionState: ...

    async def check_local_transaction(self, msg: Message) -> LocalTransactionState: ...


@dataclass(frozen=True, slots=True)
class TransactionSendResult:
    """What ``send_in_transaction`` did.

    ``local_state`` is the state the end was sent with. ``local_error`` is the
    exception ``execute_local_transaction`` raised (the state is then
    ``ROLLBACK_MESSAGE``). ``end`` is the broker's view of the transaction
    after the end (``state``, ``final`` placement of a committed message,
    ``duplicate``); when the end call failed it is ``None`` and ``end_error``
    says why: the transaction stays pending until the broker's check-back
    settles it, exactly as in RocketMQ, so this is not raised.
    """

    transaction_id: str
    msg_id: str
    send_status: SendStatus
    local_state: LocalTransactionState
    half: HalfSendResult
    message: OutgoingMessage
    end: dict[str, Any] | None = None
    end_error: BrokerError | None = None
    local_error: Exception | None = None


def coerce_local_state(value: Any, *, where: str = "listener") -> LocalTransactionState:
    """The state a listener answered, leniently: ``None`` or anything unrecognised is ``UNKNOW``.

    ``UNKNOW`` is always a safe answer (the broker asks again later), so a
    listener bug degrades to a delayed decision, never to a wrong one.
    """
    if isinstance(value, LocalTransactionState):
        return value
    if value is None:  # RocketMQ treats a null answer as UNKNOW as well
        return LocalTransactionState.UNKNOW
    if isinstance(value, str):
        try:
            return LocalTransactionState(value.lower())
        except ValueError:
            member = LocalTransactionState.__members__.get(value.upper())
            if member is not None:
                return member
    log.warning("%s returned %r, not a LocalTransactionState: treating it as UNKNOW", where, value)
    return LocalTransactionState.UNKNOW


def state_after_half(half: HalfSendResult) -> LocalTransactionState | None:
    """``None`` when the local transaction should run; otherwise the state to end with.

    As RocketMQ's sendMessageInTransaction: a half stored with any status but
    SEND_OK (not known durable) is rolled back without running the local
    transaction.
    """
    if half.status is SendStatus.SEND_OK:
        return None
    return LocalTransactionState.ROLLBACK_MESSAGE


def listener_message(message: OutgoingMessage, half: HalfSendResult, producer_group: str) -> OutgoingMessage:
    """The message as sent, with the properties RocketMQ sets before the local transaction runs.

    ``TRANSACTION_ID`` lets the listener record the id next to its business
    change, so a check-back (whose message carries the same property) can find it.
    """
    properties = {
        **message.properties,
        "TRAN_MSG": "true",
        "PGROUP": producer_group,
        "TRANSACTION_ID": half.transaction_id,
    }
    return msgspec.structs.replace(message, properties=properties)


def is_async_callable(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - objects with an async __call__
    return call is not None and inspect.iscoroutinefunction(call)


async def call_listener(fn: Callable[..., T | Awaitable[T]], *args: Any) -> T:
    """Await an async listener method; run a blocking one in a worker thread.

    Only ``Exception`` is the listener's business; ``BaseException`` (a crash,
    ``CancelledError``) propagates untouched.
    """
    if is_async_callable(fn):
        result = fn(*args)
    else:
        result = await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):
        result = await result
    return result
