"""Concurrent ``AsyncProducer.send`` calls to one topic share one batch request.

Why: one HTTP request per message cost the SDK (aiohttp, JSON, numbering) and
the broker (one request, one write group) far more than the message itself; at
64 in flight the SDK made 3.0k sends/s while the broker takes 120k msg/s in
batches. So sends to a topic that arrive in one event-loop pass, or while that
topic's earlier requests are in flight, go out together in the next request
(at most ``MAX_BATCH`` messages and ``BATCH_BYTES``). Nothing waits for a batch
to fill: a lone send leaves on the next loop pass (``call_soon``, no timer).

Each caller keeps exactly the answer it would have got alone:

* A batch is one write group on the broker, all stored or none. A refusal that
  may concern one message (a 4xx other than the topic's, the credentials' or
  the numbering's) stored nothing, so every member is sent again on its own and
  gets its own result or its own error.
* A refusal that concerns the request (unknown topic, access, fencing) or a
  failure after the retries (the broker unreachable) is what each member alone
  would have got: each caller gets its own copy of the error.
* A batch request is numbered like any other (``numbering``): it takes one
  sequence, its retries keep it, so a retry after a lost answer stores nothing twice.

The batch runs in a task of its own: a caller that is cancelled stops waiting,
the others' batch goes on. ``drain`` (the producer's ``close``) waits until
every accepted send has its answer.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from halfmq.errors import (
    AccessDenied,
    BrokerError,
    DuplicateSequenceNumber,
    InvalidProducerEpoch,
    InvalidTopicName,
    OutOfOrderSequence,
    ProducerFenced,
    SequenceNumberReused,
    SystemTopicForbidden,
    TopicNotFound,
    Unauthenticated,
    UnknownProducerId,
)
from halfmq.wire import MAX_BATCH, OutgoingMessage, SendResult

__all__ = ["BATCH_BYTES", "MAX_REQUESTS_PER_TOPIC", "MIN_SHARE", "Limits", "SendCoalescer", "concerns_the_request",
           "own_error", "take_count", "wire_size"]

# A request's messages are kept well under the broker's default request limit (32 MiB at least): a few large
# messages gain nothing from sharing a request. A broker set to a smaller limit refuses a batch over it with
# REQUEST_TOO_LARGE, and its members are then sent alone.
BATCH_BYTES = 1024 * 1024
# Batch requests of one topic in flight at once: while they wait for the broker's fsync, the next
# sends gather for the following one.
MAX_REQUESTS_PER_TOPIC = 4
# The fewest sends a request of a burst is cut down to when the burst is shared among several requests.
MIN_SHARE = 32
_OVERHEAD = 64  # JSON field names and quotes per message, for the byte estimate

# Refusals that say the same about every message of the request: a member sent alone would get them too.
_REQUEST_WIDE: tuple[type[BrokerError], ...] = (
    TopicNotFound, InvalidTopicName, SystemTopicForbidden, AccessDenied, Unauthenticated,
    ProducerFenced, InvalidProducerEpoch, OutOfOrderSequence, UnknownProducerId, DuplicateSequenceNumber,
    SequenceNumberReused,  # (PRODUCER_ID_NOT_OWNED is an AccessDenied)
)

SendBatch = Callable[[str, list[OutgoingMessage]], Awaitable[list[SendResult]]]
SendOne = Callable[[str, OutgoingMessage], Awaitable[SendResult]]


def take_count(sizes: Sequence[int], free_requests: int = 1, max_messages: int = MAX_BATCH,
               max_bytes: int = BATCH_BYTES, min_share: int = MIN_SHARE) -> int:
    """How many pending sends (oldest first, of these byte ``sizes``) the next request carries.

    A burst is shared among the ``free_requests`` that may start now, but no request is cut below
    ``min_share`` sends for it: parallel requests overlap their waits for the broker's fsync, and one
    request's lost answers (each costs a retry) never hold a whole burst. At least one send (a message
    larger than ``max_bytes`` goes alone), then as many as fit both limits.
    """
    share = max(min_share, -(-len(sizes) // max(free_requests, 1)))
    limit = min(share, max_messages)
    taken = total = 0
    for size in sizes:
        if taken and (taken >= limit or total + size > max_bytes):
            break
        taken += 1
        total += size
    return taken


def concerns_the_request(error: BaseException) -> bool:
    """True when a refused batch's error is what each member alone would get; False when members must go alone.

    Only a 4xx that is not retriable may concern one message; 5xx and transport failures concern the request.
    """
    if not isinstance(error, BrokerError):
        return True
    if error.retriable or not 400 <= error.status < 500:
        return True
    return isinstance(error, _REQUEST_WIDE)


def wire_size(message: OutgoingMessage) -> int:
    """A cheap estimate of the message's bytes in the request body."""
    size = len(message.body) + _OVERHEAD
    for name, value in message.properties.items():
        size += len(name) + len(value) + 6
    return size


def own_error(error: BaseException) -> BaseException:
    """A copy of ``error`` for one caller: raising one instance in many tasks would chain their tracebacks."""
    try:
        mine = copy.copy(error)
    except Exception:  # noqa: BLE001 - an exception type that cannot be copied: share the instance
        return error
    return mine.with_traceback(None)


@dataclass(slots=True)
class _Pending:
    topic: str
    message: OutgoingMessage
    future: asyncio.Future[SendResult]


@dataclass(slots=True)
class _Topic:
    pending: deque[_Pending] = field(default_factory=deque)
    in_flight: int = 0
    scheduled: bool = False


@dataclass(frozen=True)
class Limits:
    """How one topic's waiting sends are cut into requests; shared by the asyncio and the threaded coalescer."""

    max_requests: int = MAX_REQUESTS_PER_TOPIC
    max_messages: int = MAX_BATCH
    max_bytes: int = BATCH_BYTES
    min_share: int = MIN_SHARE

    def __post_init__(self) -> None:
        if min(self.max_requests, self.max_bytes, self.min_share) < 1 or not 1 <= self.max_messages <= MAX_BATCH:
            raise ValueError(f"max_requests, max_bytes and min_share >= 1 and 1 <= max_messages <= {MAX_BATCH} are needed")

    def next_count(self, waiting: Sequence[OutgoingMessage], in_flight: int) -> int:
        """How many of the ``waiting`` messages (oldest first) the next request carries, with ``in_flight`` requests out."""
        free = self.max_requests - in_flight
        sizes = [wire_size(m) for m in waiting[: self.max_messages * free]]
        return take_count(sizes, free, self.max_messages, self.max_bytes, self.min_share)


class SendCoalescer:
    """Sends through ``send_batch`` (members of a refused batch through ``send_one``), per topic.

    Lives on one event loop at a time (the one that sends); not thread-safe, like the asyncio producer.
    """

    def __init__(self, send_batch: SendBatch, send_one: SendOne, *, max_requests: int = MAX_REQUESTS_PER_TOPIC,
                 max_messages: int = MAX_BATCH, max_bytes: int = BATCH_BYTES, min_share: int = MIN_SHARE) -> None:
        self._limits = Limits(max_requests, max_messages, max_bytes, min_share)
        self._send_batch = send_batch
        self._send_one = send_one
        self._topics: dict[str, _Topic] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def send(self, topic: str, message: OutgoingMessage) -> SendResult:
        """``message``'s result (or error) from the next request for ``topic``."""
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a new loop (asyncio.run again): the old one's state died with it
            self._loop, self._topics, self._tasks = loop, {}, set()
        future: asyncio.Future[SendResult] = loop.create_future()
        state = self._topics.get(topic)
        if state is None:
            state = self._topics[topic] = _Topic()
        state.pending.append(_Pending(topic, message, future))
        self._schedule(state)
        return await future

    def _schedule(self, state: _Topic) -> None:
        if not state.scheduled and state.pending and state.in_flight < self._limits.max_requests:
            state.scheduled = True
            assert self._loop is not None
            # The next loop pass, not now: the other sends of this pass join the same request.
            self._loop.call_soon(self._start, state)

    def _start(self, state: _Topic) -> None:
        state.scheduled = False
        while state.in_flight < self._limits.max_requests:
            # A caller cancelled before its request left is dropped: its message is never sent.
            waiting = [p for p in state.pending if not p.future.done()]
            if not waiting:
                state.pending.clear()
                return
            count = self._limits.next_count([p.message for p in waiting[: self._limits.max_messages * self._limits.max_requests]],
                                            state.in_flight)
            batch, state.pending = waiting[:count], deque(waiting[count:])
            state.in_flight += 1
            assert self._loop is not None
            task = self._loop.create_task(self._run(state, batch), name="send-coalescer")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, state: _Topic, batch: list[_Pending]) -> None:
        try:
            await self._answer(batch)
        except Exception as exc:  # noqa: BLE001 - a fault of ours must not leave a caller waiting for ever
            for p in batch:
                if not p.future.done():
                    p.future.set_exception(own_error(exc))
        finally:
            state.in_flight -= 1
            self._schedule(state)

    async def _answer(self, batch: list[_Pending]) -> None:
        topic = batch[0].topic
        try:
            if len(batch) == 1:
                results: list[SendResult] = [await self._send_one(topic, batch[0].message)]
            else:
                results = await self._send_batch(topic, [p.message for p in batch])
        except asyncio.CancelledError:
            for p in batch:
                p.future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - every caller gets the outcome it would have had alone
            if len(batch) > 1 and not concerns_the_request(exc):
                await asyncio.gather(*(self._alone(p) for p in batch))
                return
            for p in batch:
                if not p.future.done():
                    p.future.set_exception(own_error(exc))
            return
        for p, result in zip(batch, results, strict=True):
            if not p.future.done():
                p.future.set_result(result)

    async def _alone(self, pending: _Pending) -> None:
        """A member of a refused batch, sent on its own (the batch stored nothing)."""
        if pending.future.done():  # its caller is gone: no need to send it any more
            return
        try:
            result = await self._send_one(pending.topic, pending.message)
        except asyncio.CancelledError:
            pending.future.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - handed to its caller
            if not pending.future.done():
                pending.future.set_exception(exc)
            return
        if not pending.future.done():
            pending.future.set_result(result)

    async def drain(self) -> None:
        """Wait until every send accepted so far has its answer (the producer's ``close``)."""
        if self._loop is not asyncio.get_running_loop():
            return  # sends of another (finished) loop: nothing of them can still run
        while True:
            if self._tasks:
                await asyncio.wait(list(self._tasks))
            elif any(state.scheduled or state.pending for state in self._topics.values()):
                await asyncio.sleep(0)  # a scheduled start runs and makes a task
            else:
                return

