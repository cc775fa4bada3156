"""The listener a transaction producer calls: the types a RocketMQ user writes against.

A transaction is three steps (DESIGN section 4): a *half* message the broker
stores but no consumer sees, the producer's *local transaction* (its own
database write), and an *end* that commits the message (it becomes visible on
its real topic) or rolls it back. When the end never arrives, the broker asks
the producer through its check-back endpoint (``check_app``), and the
listener's ``check_local_transaction`` answers from the producer's own records.

The two methods get different messages, because they happen at different
times: ``execute_local_transaction`` runs before the message is on any topic,
so it gets the ``OutgoingMessage`` as sent; ``check_local_transaction`` runs
for a message the broker stored, so it gets the stored ``Message`` (with
``msg_id``, ``topic``, ``queue_id``, ``born_timestamp``). Both carry the
``TRANSACTION_ID`` property, the key that joins the two. A listener typed
against ``TransactionListener`` (or ``AsyncTransactionListener``) passes
``mypy --strict``::

    class Orders:
        def execute_local_transaction(self, msg: OutgoingMessage, arg: Any) -> LocalTransactionState: ...
        def check_local_transaction(self, msg: Message) -> LocalTransactionState: ...
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any, Protocol, TypeVar, runtime_checkable

from halfmq.wire import Message, OutgoingMessage

__all__ = ["AnyTransactionListener", "AsyncTransactionListener", "LocalTransactionState", "TransactionListener",
           "call_listener", "coerce_local_state", "is_async_callable"]

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
    """RocketMQ's TransactionListener: what a producer asks about its transactions (blocking methods).

    ``TransactionProducer`` calls ``execute_local_transaction`` in the thread
    that called ``send_in_transaction`` (so the caller's database session and
    thread-locals are there); both producers run ``check_local_transaction`` on
    a worker thread of the check app, never on an event loop. The parameters
    are positional, so a listener may name them as it likes.
    """

    def execute_local_transaction(self, msg: OutgoingMessage, arg: Any, /) -> LocalTransactionState | None:
        """Run the local transaction once the half message is stored, and say how it ended.

        ``msg`` is the ``OutgoingMessage`` as sent plus the ``TRANSACTION_ID``,
        ``TRAN_MSG`` and ``PGROUP`` properties (RocketMQ sets the same before
        calling it): record ``TRANSACTION_ID`` beside the business change, so a
        check-back can find it. ``arg`` is what the caller passed to
        ``send_in_transaction``. Raising an ``Exception`` rolls the message
        back; returning ``UNKNOW`` (or ``None``) leaves it to the check-back.
        """
        ...

    def check_local_transaction(self, msg: Message, /) -> LocalTransactionState | None:
        """Answer the broker's check-back for a transaction whose end never arrived.

        ``msg`` is the stored ``Message`` (on its real topic and queue, with the
        ``TRANSACTION_ID`` property), not the ``OutgoingMessage`` the send
        began with. Answer from durable records (was the business change
        committed?), never from memory of the ``execute_local_transaction``
        call, which may have run in a process that has since died; ``UNKNOW``
        (or ``None``, or an exception) makes the broker ask again later.
        """
        ...


@runtime_checkable
class AsyncTransactionListener(Protocol):
    """``TransactionListener`` with coroutine methods, for ``AsyncTransactionProducer`` (awaited on its loop)."""

    async def execute_local_transaction(self, msg: OutgoingMessage, arg: Any, /) -> LocalTransactionState | None:
        """As ``TransactionListener.execute_local_transaction``, awaited."""
        ...

    async def check_local_transaction(self, msg: Message, /) -> LocalTransactionState | None:
        """As ``TransactionListener.check_local_transaction``, awaited."""
        ...


Answer = LocalTransactionState | None


class AnyTransactionListener(Protocol):
    """What ``AsyncTransactionProducer`` and ``CheckApp`` accept: each method blocking or a coroutine, as it likes.

    Both listener protocols fit it, and so does a mix such as the SQLAlchemy
    barrier (its local transaction awaits a shared database write, its check
    is one blocking lookup): each method is awaited if it is a coroutine and
    run in a worker thread if it is not.
    """

    def execute_local_transaction(self, msg: OutgoingMessage, arg: Any, /) -> Answer | Awaitable[Answer]:
        """See ``TransactionListener.execute_local_transaction``."""
        ...

    def check_local_transaction(self, msg: Message, /) -> Answer | Awaitable[Answer]:
        """See ``TransactionListener.check_local_transaction``."""
        ...


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


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """True for a coroutine function, or an object whose ``__call__`` is one: such a listener is awaited."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004 - an async __call__


async def call_listener(fn: Callable[..., T | Awaitable[T]], *args: Any) -> T:
    """Await an async listener method; run a blocking one in a worker thread (never on the loop).

    Only ``Exception`` is the listener's business; ``BaseException`` (a crash,
    ``CancelledError``) propagates untouched.
    """
    result = fn(*args) if is_async_callable(fn) else await asyncio.to_thread(fn, *args)
    if inspect.isawaitable(result):
        result = await result
    return result
