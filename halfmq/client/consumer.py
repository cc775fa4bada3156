"""The handler loop: receive, run the handler per message, ack or nack the batch, repeat until stopped.

RocketMQ 5 calls this a ``PushConsumer``; halfmq keeps the shorter
``Consumer`` for it and RocketMQ's ``SimpleConsumer`` for receive/ack by hand
(``simple_consumer``). ``AsyncConsumer`` is the one implementation; the
blocking ``Consumer`` runs it on the SDK's event-loop thread (``loop_thread``)
and its sync handler on worker threads, so both loops poll, back off, settle
and stop alike.

``stop()`` may be called from the loop, from another thread or from a signal
handler. A pending long poll is cancelled rather than waited out, so ``run()``
returns within moments on an idle topic; whatever the broker handed the cut
poll it gives back when it sees the connection gone (after
``invisible_seconds`` at worst), and the handler never sees it. Messages
received but not yet handed to the handler are released with a nack; handlers
already running finish and their acks are sent before ``run()`` returns.

While batches are quick next to ``invisible_seconds`` (``polling.prefetch_next``)
the next receive is already in flight while a batch's handlers run, and a
batch's ack goes out while the next batch is handled, so neither round trip
costs the loop time of its own. A loop that stops with a prefetched batch in
hand nacks it unhandled (a release), as it does with messages it received but
never started.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Unpack

from halfmq.errors import BrokerError
from halfmq.wire import Message, SettleResult

from .loop_thread import AsyncLifecycle, Blocking, cancel, run, twin_property
from .polling import PollFailures, PollSettings, prefetch_next
from .settlement import Outcome, Settle, failure_reason, log_handler_failure, settle_batch
from .simple_consumer import AsyncSimpleConsumer, tag_list
from .step_drivers import run_steps_async
from .tracing import processing
from .transport import TransportOptions

__all__ = ["AsyncConsumer", "Consumer"]

_HANDLER_THREAD = "halfmq-handler"  # the name of the blocking consumers' handler threads (a prefix)
# How long a stopping loop waits for its prefetched receive before cancelling it.
PREFETCH_GRACE_SECONDS = 0.5


class AsyncConsumer(AsyncLifecycle):
    """Consume one topic as one group with a handler (RocketMQ's PushConsumer), handlers run as tasks.

    ``handler`` may be a coroutine function or a plain function (a plain one
    runs on the event loop, so it must not block). Delivery is at-least-once:
    a handler must tolerate seeing a message again. A stopped consumer stays
    stopped; make a new one to consume again. ``client`` is the
    ``AsyncSimpleConsumer`` it polls with, e.g. for the group's lag.
    """

    def __init__(self, base_url: str | None, group: str, topic: str, handler: Callable[[Message], Awaitable[Any] | Any], *, max_messages: int = 16,
                 invisible_seconds: float = 30.0, wait_seconds: float = 10.0, concurrency: int = 4,
                 tags: str | Sequence[str] | None = None, **options: Unpack[TransportOptions]) -> None:
        """``tags``: the handler gets only messages with one of them (``AsyncSimpleConsumer.receive``); ``options``: the
        client's (``AsyncSimpleConsumer``: ``timeout``, ``retries``, ``token`` …)."""
        self._poll = PollSettings(max_messages, invisible_seconds, wait_seconds, concurrency, tag_list(tags))
        self.client = AsyncSimpleConsumer(base_url, group, topic, **options)
        self._handler = handler
        self._stopping = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._run_done: asyncio.Event | None = None
        self._settling: asyncio.Future[None] | None = None  # the ack/nack of the latest batch, if still in flight

    @property
    def stopped(self) -> bool:
        """Whether ``stop()`` was called: ``run()`` is finishing or done, and will not start again."""
        return self._stopping

    def stop(self) -> None:
        """Ask ``run()`` to finish its running handlers, settle them and return; safe from any thread or a signal handler."""
        self._stopping = True
        loop, event = self._loop, self._stop_event
        if loop is None or event is None:
            return  # run() has not started; it checks _stopping first
        try:
            loop.call_soon_threadsafe(event.set)  # wakes the loop from any thread, or from a signal handler on its own
        except RuntimeError:  # loop already closed: nothing left to wake
            pass

    async def run(self) -> None:
        """Consume until ``stop()``; a failed receive is logged and retried after a backoff, never raised."""
        self._stop_event = stop_event = asyncio.Event()
        self._run_done = asyncio.Event()
        self._loop = loop = asyncio.get_running_loop()
        semaphore = asyncio.Semaphore(self._poll.concurrency)
        failures = PollFailures(self.client.topic)
        last_batch_seconds: float | None = None
        pending: asyncio.Future[list[Message]] | None = None  # the next receive, possibly already in flight
        try:
            while not self._stopping:
                poll, pending = pending or self._start_receive(), None
                try:
                    batch = await self._receive(poll)
                except BrokerError as exc:
                    with contextlib.suppress(TimeoutError):  # the backoff, cut short by stop()
                        await asyncio.wait_for(stop_event.wait(), timeout=failures.failed(exc))
                    continue
                failures.succeeded()
                if not batch:
                    continue
                quick = not self._stopping and prefetch_next(last_batch_seconds, self._poll.invisible_seconds)
                if quick:
                    # Pipelining: the next batch's round trip overlaps this one's handlers and ack.
                    pending = self._start_receive()
                started = loop.time()
                await self._process(batch, semaphore, settle_behind=quick)
                last_batch_seconds = loop.time() - started
        finally:
            if pending is not None:
                await self._give_back(pending, semaphore)
            await self._settled()
            self._run_done.set()

    def _start_receive(self) -> asyncio.Future[list[Message]]:
        return asyncio.ensure_future(self.client.receive(self._poll.max_messages, self._poll.invisible_seconds, self._poll.wait_seconds,
                                                        self._poll.tags))

    async def _receive(self, poll: asyncio.Future[list[Message]]) -> list[Message] | None:
        assert self._stop_event is not None
        stopped = asyncio.ensure_future(self._stop_event.wait())
        either: set[asyncio.Future[Any]] = {poll, stopped}
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            await cancel(poll)
        if poll.cancelled():
            return None
        return poll.result()

    async def _give_back(self, poll: asyncio.Future[list[Message]], semaphore: asyncio.Semaphore) -> None:
        """Release what a prefetched receive brought when the loop stops before handling it.

        A prefetch against a backlog answers within milliseconds, so it gets a
        short grace; one still out after that is a held long poll, cancelled
        as at any stop (the broker hands its messages back when it finds the
        client gone).
        """
        await asyncio.wait({poll}, timeout=PREFETCH_GRACE_SECONDS)
        await cancel(poll)
        if poll.cancelled() or poll.exception() is not None:
            return  # nothing was handed out to us, or we cannot know what: the invisibility timer covers it
        batch = poll.result()
        if batch:
            await self._process(batch, semaphore)  # stopping: every message is a RELEASE, nacked at once

    async def _handle(self, message: Message, semaphore: asyncio.Semaphore) -> tuple[Outcome, str | None]:
        """The message's outcome, and for a failure the nack's reason (the exception, as the journey shows it)."""
        async with semaphore:
            if self._stopping:
                return Outcome.RELEASE, None
            try:
                with processing(self.client.group, message):
                    result = self._handler(message)
                    if inspect.isawaitable(result):
                        await result
            except Exception as exc:  # noqa: BLE001 - a failed handler means nack, whatever it raised
                log_handler_failure(message, exc)
                raised = exc.__cause__ if isinstance(exc, _HandlerExit) and exc.__cause__ is not None else exc
                return Outcome.NACK, failure_reason(raised)
            return Outcome.ACK, None

    async def _process(self, batch: list[Message], semaphore: asyncio.Semaphore, *, settle_behind: bool = False) -> None:
        """Handle ``batch``, then ack/nack it: awaited, or (``settle_behind``) while the next batch is handled.

        Either way a message is settled only after its handler finished, and
        one settle is in flight at a time, in batch order; ``run()`` returns
        only once the last one is done.
        """
        handled = await asyncio.gather(*(self._handle(m, semaphore) for m in batch))
        await self._settled()
        outcomes, reasons = [o for o, _ in handled], [r for _, r in handled]
        self._settling = asyncio.ensure_future(run_steps_async(settle_batch(batch, outcomes, reasons), self._perform_settle))
        if not settle_behind:
            await self._settled()

    async def _settled(self) -> None:
        settling, self._settling = self._settling, None
        if settling is not None:
            await settling

    async def _perform_settle(self, step: Settle) -> list[SettleResult]:
        if step.action == "ack":
            return await self.client.ack(step.handles)
        return await self.client.nack(step.handles, step.reason)

    async def change_invisible_duration(self, message: Message | str, seconds: float) -> bool:
        """From a handler that needs longer than ``invisible_seconds``: keep its message hidden ``seconds`` from now
        (``AsyncSimpleConsumer.change_invisible_duration``), so it is not handed to another consumer meanwhile."""
        return await self.client.change_invisible_duration(message, seconds)

    async def close(self) -> None:
        """Stop, let a running run() finish its batch and settle it, then close the connections."""
        self.stop()
        if self._run_done is not None:
            await self._run_done.wait()
        await self.client.close()


class _HandlerExit(Exception):
    """A sync handler raised a ``BaseException`` (``sys.exit`` in one): its message is nacked.

    Passed on as it is, it would end the SDK's event-loop thread, not the handler's call.
    """


def _call_handler(handler: Callable[[Message], Any], message: Message) -> None:
    try:
        handler(message)
    except Exception:
        raise
    except BaseException as exc:
        raise _HandlerExit(f"the handler raised {type(exc).__name__}") from exc


async def _on_worker(workers: ThreadPoolExecutor, handler: Callable[[Message], Any], message: Message) -> None:
    # In a copy of the loop's context: the handler sees the process span (tracing), as an async handler does.
    await asyncio.get_running_loop().run_in_executor(workers, contextvars.copy_context().run, _call_handler, handler, message)


class Consumer(Blocking[AsyncConsumer]):
    """``AsyncConsumer`` for blocking code: ``run()`` blocks, the sync handler runs on ``concurrency`` threads.

    The handler never runs on the SDK's event-loop thread, so it may block
    (a database call, ``time.sleep``) without stalling the polls. Everything
    else, and ``stop()`` from another thread or a signal handler, is
    ``AsyncConsumer``'s.
    """

    def __init__(self, base_url: str | None, group: str, topic: str, handler: Callable[[Message], Any], *, max_messages: int = 16,
                 invisible_seconds: float = 30.0, wait_seconds: float = 10.0, concurrency: int = 4,
                 tags: str | Sequence[str] | None = None, **options: Unpack[TransportOptions]) -> None:
        """``AsyncConsumer``'s settings; ``concurrency`` is also the number of handler threads."""
        PollSettings(max_messages, invisible_seconds, wait_seconds, concurrency, tag_list(tags))  # a bad setting fails before the pool is made
        self._workers = ThreadPoolExecutor(concurrency, _HANDLER_THREAD)
        on_worker = partial(_on_worker, self._workers, handler)  # not a bound method: the twin must not hold self
        super().__init__(AsyncConsumer(base_url, group, topic, on_worker, max_messages=max_messages, invisible_seconds=invisible_seconds,
                                       wait_seconds=wait_seconds, concurrency=concurrency, tags=tags, **options))

    stopped = twin_property(AsyncConsumer.stopped)

    def stop(self) -> None:
        """``AsyncConsumer.stop``: only wakes the loop, so a signal handler may call it."""
        self._async.stop()

    def change_invisible_duration(self, message: Message | str, seconds: float) -> bool:
        """``AsyncConsumer.change_invisible_duration``, from a handler (or any thread but the SDK's loop)."""
        return run(self._async.change_invisible_duration(message, seconds))

    def close(self) -> None:
        """``AsyncConsumer.close``; from a handler only ``stop()``, since closing waits for the handlers to finish."""
        if threading.current_thread().name.startswith(_HANDLER_THREAD):
            self.stop()  # the connections close when the program exits
        else:
            run(self._async.close())

    def run(self) -> None:
        """``AsyncConsumer.run``, blocking the calling thread; on return every handler is done and settled."""
        try:
            run(self._async.run())
        finally:
            self._workers.shutdown(wait=True)
