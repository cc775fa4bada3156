"""One producer in the Kafka clients' shape: plain and idempotent sends, and Kafka-style transactions, configured.

Why one: a producer that numbers its sends (idempotence) and one that commits many
sends as one (a ``transactional_id``) are the same client with features switched on,
as in aiokafka's ``AIOKafkaProducer(enable_idempotence=…, transactional_id=…)`` and
confluent-kafka's ``transactional.id``; two classes made users choose before they knew
why. ``AsyncProducer`` is the only implementation; the blocking ``Producer`` runs it on
the SDK's event-loop thread (``loop_thread``), so threads sending at once share batch
requests exactly as asyncio tasks do.

A ``SendResult`` whose status is ``FLUSH_DISK_TIMEOUT`` (or another non-OK
status) inside a 200 answer is returned, not retried: the broker stored the
message, and as in RocketMQ the caller decides whether that is good enough.
A 503 ``FLUSH_DISK_TIMEOUT``/``STORE_UNAVAILABLE`` problem or an unreachable
broker is retried with backoff; the UNIQ_KEY set before the first attempt
identifies a message that might end up stored twice.

Transactions (DESIGN section 11), with ``transactional_id``::

    producer = Producer(url, transactional_id="copier-1")
    producer.init_transactions()            # fences any older instance with this transactional id
    producer.begin_transaction()
    producer.send("OUT", "hello")           # buffered: visible only on commit
    producer.send_offsets_to_transaction(received)  # their acks take effect only on commit
    producer.commit_transaction()

``ProducerFenced`` is fatal (a newer instance owns the id: stop); ``TransactionAborted``
is abortable (call ``abort_transaction()`` and run the whole transaction again). A
transaction's sends go out in numbered batches (at ``transaction_batch_size``, on
``flush()`` and before the commit), so the SDK's own retries never store a message twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar, Unpack, cast, overload

from halfmq.errors import BrokerError, InvalidTxnState, ProducerFenced
from halfmq.wire import (
    MAX_BATCH,
    Message,
    MessageJourney,
    MessageSummary,
    OffsetReadResponse,
    OutgoingMessage,
    RecallResult,
    SendResult,
    TopicInfo,
    TxnEndResult,
    TxnSendResult,
)

from . import endpoints, tracing
from .endpoints import Call
from .loop_thread import Blocking, blocking, run, twin_property
from .messages import Body, epoch_ms, outgoing, sendable_topic
from .numbering import Numbering, numbering_for
from .producer_transaction_steps import TransactionalSteps
from .retry import async_retrying
from .send_options import SendOptions
from .send_policy import send_coalescer
from .transport import AsyncClient, ClientOptions, TransportOptions

__all__ = ["AsyncProducer", "Numbering", "Producer", "ProducerOptions"]

log = logging.getLogger("halfmq.client.producer")

T = TypeVar("T")
if TYPE_CHECKING:
    from typing_extensions import TypeVar as DefaultTypeVar

    # What ``send`` returns: a ``SendResult``, or None for a transactional producer (its sends are buffered).
    # A bare ``Producer`` annotation means the plain one.
    R = DefaultTypeVar("R", default=SendResult)
else:
    R = TypeVar("R")


class ProducerOptions(ClientOptions, total=False):
    """The producers' keyword options beside ``transactional_id``, named once (documented on ``AsyncProducer``)."""

    transaction_timeout_ms: int | None
    transaction_batch_size: int


class AsyncProducer(AsyncClient, Generic[R]):
    """The producer: plain sends by default, numbered so retries never store twice, transactions with ``transactional_id``.

    Built to stay fast at many concurrent sends: requests spread over ``pool_size`` *
    ``connections_per_client`` connections, at most ``max_in_flight`` at once (DESIGN
    section 7), and concurrent ``send`` calls to one topic share batch requests (the batching
    engine, ``send_policy``), each caller with its own result or error.
    """

    @overload
    def __init__(self: AsyncProducer[SendResult], base_url: str | None = None, *, transactional_id: None = None,
                 **options: Unpack[ProducerOptions]) -> None: ...
    @overload
    def __init__(self: AsyncProducer[None], base_url: str | None = None, *, transactional_id: str,
                 **options: Unpack[ProducerOptions]) -> None: ...
    @overload
    def __init__(self: AsyncProducer[SendResult | None], base_url: str | None = None, *, transactional_id: str | None,
                 **options: Unpack[ProducerOptions]) -> None: ...

    def __init__(self, base_url: str | None = None, *, transactional_id: str | None = None, transaction_timeout_ms: int | None = None,
                 transaction_batch_size: int = 100, idempotent: bool = True, idempotent_id: str | None = None, coalesce: bool = True,
                 **transport: Unpack[TransportOptions]) -> None:
        """Every send is numbered (see ``Numbering``), so a retry never stores twice; ``idempotent=False`` turns that off.

        ``transactional_id``: a stable name for this producer across restarts, which makes it transactional
        (``init_transactions()`` …): its ``send()`` joins the open transaction and returns None; the broker aborts
        a transaction still open ``transaction_timeout_ms`` after its begin (its default when None); its sends go
        out ``transaction_batch_size`` to a request. Without it the transactional methods raise ``InvalidTxnState``.
        ``idempotent_id``: number plain sends under this stable identity instead of a producer id of their own.
        Sends to one topic made while others are under way share batch requests; ``coalesce=False`` sends one
        request per message.

        The transport's options (``timeout``, ``retries``, ``pool_size`` …) are ``AsyncClient``'s. Given a broker
        set's URLs, a node that did not answer within ``timeout`` is left: the retry goes to the next URL; while the
        set elects a leader the call waits for it (``broker_urls``, not a retry).
        """
        super().__init__(base_url, **transport)
        self._numbering = numbering_for(idempotent, idempotent_id, transactional_id)
        self.transactional_id = transactional_id  # the stable name a new instance fences an older one with; None: a plain producer
        self._steps = None if transactional_id is None else TransactionalSteps(transactional_id, transaction_timeout_ms, transaction_batch_size)
        self._coalescer = send_coalescer(self._send_many, self._send_one) if coalesce else None

    async def _send_one(self, topic: str, message: OutgoingMessage) -> SendResult:
        return (await self._send_many(topic, [message]))[0]

    async def _send_many(self, topic: str, messages: list[OutgoingMessage]) -> list[SendResult]:
        call = endpoints.send(topic, messages)
        if self._numbering is None:
            return await self._call(call)
        policy = async_retrying(self._retries)
        results: list[SendResult] = await self._numbering.send(policy, policy, self._transport.call, call)
        return results

    async def send(self, topic: str, message: OutgoingMessage | Body, **options: Unpack[SendOptions]) -> R:
        """One message: its ``SendResult``; on a transactional producer, added to the open transaction and None.

        Sends issued while others are under way share their next request (unless ``coalesce=False``). A
        transaction's sends are buffered (visible only on commit); without an open one they raise ``InvalidTxnState``.
        """
        sendable_topic(topic)
        msg = outgoing(message, **options)
        if self._steps is not None:
            if self._steps.add(topic, msg):
                await self.flush()
            return cast(R, None)
        submit = self._send_one if self._coalescer is None else self._coalescer.submit
        return cast(R, await tracing.sent(topic, msg, submit))

    async def send_batch(self, topic: str, messages: Iterable[OutgoingMessage | Body]) -> list[SendResult]:
        """One request for many messages, stored all or none; results come back in the order sent (not in a transaction)."""
        if self._steps is not None:
            raise InvalidTxnState("a transactional producer sends with send(), inside its transaction")
        sendable_topic(topic)
        batch = [outgoing(m) for m in messages]
        if len(batch) > MAX_BATCH:
            # Splitting would quietly turn one request into several that can half-succeed; the caller should choose how to chunk.
            raise ValueError(f"a batch holds at most {MAX_BATCH} messages, got {len(batch)}")
        return await tracing.sent(topic, batch, self._send_many) if batch else []

    async def recall(self, topic: str, recall_handle: str) -> RecallResult:
        """Cancel a timed message not yet due by the ``recall_handle`` its ``SendResult`` carries: it is never delivered.

        Raises ``RecallTooLate`` once it is due (delivered, or about to be) and ``InvalidRecallHandle`` for a handle of
        another topic or one the broker never answered; a second recall answers ``duplicate=True`` (safe to retry).
        """
        return await self._call(endpoints.recall(sendable_topic(topic), recall_handle))

    async def create_topic(self, name: str, queues: int | None = None) -> TopicInfo:
        """Topics are also created on first send; this one chooses its number of queues."""
        return await self._call(endpoints.create_topic(sendable_topic(name), queues))

    async def get_topic(self, name: str) -> TopicInfo:
        """The topic's queues and their offsets (raises ``TopicNotFound``)."""
        return await self._call(endpoints.get_topic(name))

    async def list_topics(self) -> list[TopicInfo]:
        """Every topic the credentials may see."""
        return await self._call(endpoints.list_topics())

    async def read(self, topic: str, queue_id: int, offset: int, max: int = 32) -> OffsetReadResponse:  # noqa: A002
        """Offset read: touches no consumer group's state (replays, tools, Spark)."""
        return await self._call(endpoints.read(topic, queue_id, offset, max))

    async def health(self) -> Any:
        """The broker's health answer, tried once: a probe should see the broker as it is now."""
        return await self._transport.call(endpoints.health())

    # --- where is my message? ------------------------------------------------------------------------------------
    async def find_messages(self, key: str, since: datetime | float | None = None, limit: int = 50,
                            topic: str | None = None) -> list[MessageSummary]:
        """The messages sent with ``key`` (one of their keys, or their id), newest first, at most ``limit`` (≤ 256).

        ``since``: only those stored since then (an aware datetime, or epoch seconds). ``topic``: only that topic's;
        without it, every topic the credentials may publish to or subscribe to (each topic's newest first, then its
        next: a topic full of messages with the key cannot crowd another's out). Other topics' messages are left out.
        """
        return await self._call(endpoints.find_messages(key, epoch_ms(since, "since") or 0, limit, topic))

    async def journey(self, msg_id: str, topic: str | None = None) -> MessageJourney:
        """Where is my message? What the broker's log says happened to ``msg_id``: sent, its transaction, its timer,
        each delivery (group, attempt), nack (reason), ack, dead letter and resend, in time order.

        ``topic``: the message's (a send's result and a search's summaries carry it). Raises ``MessageNotFound`` for an
        id no topic the credentials may publish to or subscribe to has, and ``AmbiguousMessageId`` (``extra["topics"]``)
        when messages on several of them carry the id (ids a producer chose): name the topic.
        """
        return await self._call(endpoints.message_journey(msg_id, topic))

    # --- transactions (with ``transactional_id``) ---------------------------------------------------------------
    @property
    def epoch(self) -> int | None:
        """This instance's generation of ``transactional_id`` (set by ``init_transactions()``)."""
        return None if self._steps is None else self._steps.epoch

    def _transaction(self) -> TransactionalSteps:
        if self._steps is None:
            raise InvalidTxnState("this producer has no transactional_id: make it with transactional_id=… to use transactions")
        return self._steps

    async def _in_transaction(self, call: Call[T]) -> T:
        try:
            return await self._call(call)
        except Exception as exc:
            self._transaction().failed(exc)  # a fencing is fatal for good
            raise

    async def init_transactions(self) -> None:
        """Register this instance: the broker bumps the epoch and aborts what an older instance left open."""
        steps = self._transaction()
        steps.initialised(await self._in_transaction(steps.init()))

    async def begin_transaction(self) -> None:
        """Open a transaction: the sends and acks until its commit or abort take effect together."""
        steps = self._transaction()
        await self._in_transaction(steps.begin())
        steps.begun()

    async def flush(self) -> list[TxnSendResult]:
        """Every send made so far handed to the broker, as Kafka's flush.

        In a transaction: the buffered messages (still invisible), and the ids and queues of the
        transaction's messages so far; on a plain producer: waits for the sends under way, and [].
        """
        if self._steps is None:
            if self._coalescer is not None:
                await self._coalescer.drain()
            return []
        steps = self._steps
        while (call := steps.next_pending()) is not None:
            steps.answered(await self._in_transaction(call))
        return list(steps.results)

    async def send_offsets_to_transaction(self, receipts: Sequence[Message | str]) -> None:
        """Ack received messages inside the transaction: hidden from their group while open, settled on commit."""
        steps = self._transaction()
        await self.flush()
        if receipts:
            acked = await self._in_transaction(steps.acks(receipts))
            steps.answered(acked)

    async def commit_transaction(self) -> TxnEndResult:
        """Every message visible and every ack applied, or none; a retried commit gets the first answer."""
        steps = self._transaction()
        await self.flush()
        result = await self._in_transaction(steps.commit())
        steps.ended()
        return result

    async def abort_transaction(self) -> TxnEndResult:
        """Nothing of the transaction becomes visible; its acked messages are delivered again."""
        steps = self._transaction()
        steps.ended()
        return await self._in_transaction(steps.abort())

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncProducer[R]]:
        """``async with producer.transaction() as tx:``: begin, then commit when the block ends, or abort when it
        raises (the exception goes on). After ``ProducerFenced`` nothing is aborted: a newer instance owns the id."""
        await self.begin_transaction()
        try:
            yield self
        except BaseException as exc:
            await _abort_after(self.abort_transaction, exc)
            raise
        await self.commit_transaction()

    async def close(self) -> None:
        """Every send already made gets its answer first; then the connections close."""
        if self._coalescer is not None:
            await self._coalescer.drain()
        await super().close()


async def _abort_after(abort: Callable[[], Awaitable[Any]], exc: BaseException) -> None:
    """Abort a transaction whose block raised ``exc``, unless the producer was fenced; a failed abort is logged, so the
    block's own exception is the one raised (the broker aborts the transaction at its timeout anyway)."""
    if isinstance(exc, ProducerFenced):
        return
    try:
        await abort()
    except BrokerError as failed:
        log.warning("aborting the transaction after %s failed: %s", type(exc).__name__, failed)


class Producer(Blocking[AsyncProducer[R]], Generic[R]):
    """The blocking producer: ``AsyncProducer`` run on the SDK's event-loop thread, with the same options.

    One instance can be shared by many threads and their sends do not serialize: they meet on the
    one loop, where sends to one topic share batch requests. A transactional producer runs one
    transaction at a time, from one thread.
    """

    @overload
    def __init__(self: Producer[SendResult], base_url: str | None = None, *, transactional_id: None = None,
                 **options: Unpack[ProducerOptions]) -> None: ...
    @overload
    def __init__(self: Producer[None], base_url: str | None = None, *, transactional_id: str,
                 **options: Unpack[ProducerOptions]) -> None: ...
    @overload
    def __init__(self: Producer[SendResult | None], base_url: str | None = None, *, transactional_id: str | None,
                 **options: Unpack[ProducerOptions]) -> None: ...

    def __init__(self, base_url: str | None = None, *, transactional_id: str | None = None, **options: Unpack[ProducerOptions]) -> None:
        """The options of ``AsyncProducer``, the same defaults (``pool_size`` … bound the loop's connections)."""
        super().__init__(cast("AsyncProducer[R]", AsyncProducer(base_url, transactional_id=transactional_id, **options)))
        self.transactional_id = transactional_id  # the stable name a new instance fences an older one with; None on a plain producer

    send = blocking(AsyncProducer.send)
    send_batch = blocking(AsyncProducer.send_batch)
    recall = blocking(AsyncProducer.recall)
    create_topic = blocking(AsyncProducer.create_topic)
    get_topic = blocking(AsyncProducer.get_topic)
    list_topics = blocking(AsyncProducer.list_topics)
    read = blocking(AsyncProducer.read)
    health = blocking(AsyncProducer.health)
    find_messages = blocking(AsyncProducer.find_messages)
    journey = blocking(AsyncProducer.journey)

    epoch = twin_property(AsyncProducer.epoch)
    init_transactions = blocking(AsyncProducer.init_transactions)
    begin_transaction = blocking(AsyncProducer.begin_transaction)
    flush = blocking(AsyncProducer.flush)
    send_offsets_to_transaction = blocking(AsyncProducer.send_offsets_to_transaction)
    commit_transaction = blocking(AsyncProducer.commit_transaction)
    abort_transaction = blocking(AsyncProducer.abort_transaction)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[Producer[R]]:
        """``with producer.transaction() as tx:``: ``AsyncProducer.transaction`` for blocking code."""
        self.begin_transaction()
        try:
            yield self
        except BaseException as exc:
            run(_abort_after(self._async.abort_transaction, exc))
            raise
        self.commit_transaction()
