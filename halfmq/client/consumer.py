"""A blocking consumer loop: receive, run the handler on a bounded thread pool,
ack or nack the batch, repeat until stopped.

``stop()`` only sets flags, so it is safe from another thread or a signal
handler. ``run()`` then returns promptly: it does not sit out a pending long
poll (whatever that poll brings back later is nacked at once, unhandled),
messages not yet handed to the handler are released with a nack, and handlers
already running are waited for and their acks sent.

The polls run on a daemon thread, so a pending long poll does not hold the
process either: a program that returns from ``run()`` exits at once (Ctrl-C on
an idle topic), where a pool's worker thread kept it alive until the poll's
``wait_seconds`` ran out. A poll cut that way by the exit hands nothing to the
handler; a message the broker gave it just before is released when the broker
sees the connection gone, else after ``invisible_seconds``.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Self, TypeVar

from halfmq.errors import BrokerError
from halfmq.wire import Message, SettleResult

from .consumer_client import ConsumerClient
from .polling import PollFailures, PollSettings
from .settlement import Outcome, Settle, log_handler_failure, settle_batch
from .step_drivers import run_steps
from .transport import TIMEOUT, Verify

__all__ = ["Consumer"]

T = TypeVar("T")

log = logging.getLogger(__name__)


class Consumer:
    """Pop-style consumer for one group on one topic, handlers run in threads.

    Delivery is at-least-once: a handler must tolerate seeing a message again.
    A stopped consumer stays stopped; make a new one to consume again.
    """

    def __init__(
        self,
        base_url: str | None,
        group: str,
        topic: str,
        handler: Callable[[Message], Any],
        *,
        max_messages: int = 16,
        invisible_seconds: float = 30.0,
        wait_seconds: float = 10.0,
        concurrency: int = 4,
        timeout: float = TIMEOUT,
        retries: int = 3,
        token: str | None = None,
        verify: Verify | None = None,
    ) -> None:
        self._poll = PollSettings(max_messages, invisible_seconds, wait_seconds, concurrency)
        self.client = ConsumerClient(base_url, group, topic, timeout=timeout, retries=retries, token=token, verify=verify)
        self._handler = handler
        self._stop = threading.Event()
        # Set by stop() and by every finished poll or handler, so the loop can
        # sleep on one thing and re-check its state when anything changes.
        self._wake = threading.Event()
        # run() and abandoned long polls still using the client; close() waits
        # for them by leaving the actual close to the last one out.
        self._lock = threading.Lock()
        self._users = 0
        self._closing = False
        self._closed = False

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def run(self) -> None:
        self._acquire_client()
        failures = PollFailures(self.client.topic)
        poller = _DaemonPoller()
        workers = ThreadPoolExecutor(max_workers=self._poll.concurrency, thread_name_prefix="halfmq-handler")
        try:
            while not self._stop.is_set():
                try:
                    batch = self._receive(poller)
                except BrokerError as exc:
                    self._stop.wait(failures.failed(exc))
                    continue
                failures.succeeded()
                if batch:
                    self._process(batch, workers)
        finally:
            workers.shutdown(wait=True)
            # Never wait for a pending long poll; _release_late settles it.
            poller.shutdown()
            self._release_client()

    def _receive(self, poller: _DaemonPoller) -> list[Message] | None:
        poll = poller.submit(self.client.receive, self._poll.max_messages, self._poll.invisible_seconds, self._poll.wait_seconds)
        poll.add_done_callback(lambda _: self._wake.set())
        while True:
            # Clear before checking, so a wake-up landing in between is not
            # lost; a stale one (a handler callback of the last batch) only
            # costs another look.
            self._wake.clear()
            if poll.done() or self._stop.is_set():
                break
            self._wake.wait()
        if poll.done():
            return poll.result()
        self._acquire_client()
        poll.add_done_callback(self._release_late)
        return None

    def _release_late(self, poll: Future[list[Message]]) -> None:
        """Nack what a poll abandoned at stop brought back, then finish a deferred close."""
        try:
            handles = [m.receipt_handle for m in poll.result() if m.receipt_handle]
            if handles:
                self.client.nack(handles)
        except Exception as exc:  # noqa: BLE001 - the messages will reappear after invisible_seconds anyway
            log.debug("could not release messages of a poll abandoned at stop: %s", exc)
        self._release_client()

    def _handle(self, message: Message) -> Outcome:
        try:
            self._handler(message)
        except Exception as exc:  # noqa: BLE001 - a failed handler means nack, whatever it raised
            log_handler_failure(message, exc)
            return Outcome.NACK
        return Outcome.ACK

    def _process(self, batch: list[Message], workers: ThreadPoolExecutor) -> None:
        if self._stop.is_set():
            self._settle(batch, [Outcome.RELEASE] * len(batch))
            return
        futures = [workers.submit(self._handle, m) for m in batch]
        for future in futures:
            future.add_done_callback(lambda _: self._wake.set())
        while True:
            self._wake.clear()
            if self._stop.is_set():
                for future in futures:
                    future.cancel()  # only those not yet started
            if all(f.done() for f in futures):
                break
            self._wake.wait()
        self._settle(batch, [self._outcome(f) for f in futures])

    @staticmethod
    def _outcome(future: Future[Outcome]) -> Outcome:
        if future.cancelled():
            return Outcome.RELEASE
        if future.exception() is not None:  # a BaseException escaped the handler
            return Outcome.NACK
        return future.result()

    def _settle(self, batch: list[Message], outcomes: list[Outcome]) -> None:
        run_steps(settle_batch(batch, outcomes), self._perform_settle)

    def _perform_settle(self, step: Settle) -> list[SettleResult]:
        return (self.client.ack if step.action == "ack" else self.client.nack)(step.handles)

    def _acquire_client(self) -> None:
        with self._lock:
            self._users += 1

    def _release_client(self) -> None:
        with self._lock:
            self._users -= 1
            close_now = self._closing and self._users == 0 and not self._closed
            self._closed = self._closed or close_now
        if close_now:
            self.client.close()

    def close(self) -> None:
        """Stop, and close the connection pool once run() and any abandoned poll are done with it."""
        self.stop()
        with self._lock:
            self._closing = True
        self._acquire_client()
        self._release_client()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _DaemonPoller:
    """Runs one call at a time on a daemon thread: an interpreter exiting does not wait for a long poll on it."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Future[Any], Callable[..., Any], tuple[Any, ...]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="halfmq-poll", daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        future: Future[T] = Future()
        self._calls.put((future, fn, args))
        return future

    def shutdown(self) -> None:
        """The thread ends after the call it runs, if any; nothing waits for it."""
        self._calls.put(None)

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args = call
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on the future
                future.set_exception(exc)
