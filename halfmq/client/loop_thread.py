"""The blocking classes are the async ones, driven on one event loop that runs on a thread of its own.

Why: writing every client twice (blocking and asyncio) gave hand-kept twins
that drifted apart (issue 35). The async classes are the only source; a
blocking class holds its async twin and runs each call on this loop
(dramatiq's ``EventLoopThread`` pattern). Threads that call one blocking
client at once meet on the loop, so the batching engine coalesces their sends
exactly as it does for asyncio tasks.

One loop serves the whole process: it starts on first use, runs on a daemon
thread (it never keeps the interpreter alive) and is started afresh in a
child after ``fork`` (a forked child has the thread's memory but not the
thread). A blocking call made *on* the loop's thread would wait for itself
forever, so it raises instead: user callbacks (handlers, listeners) run on
worker threads, never on the loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import os
import threading
import weakref
from collections.abc import Callable, Coroutine
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, Protocol, Self, TypeVar, overload

__all__ = ["AsyncLifecycle", "Blocking", "EventLoopThread", "blocking", "cancel", "close_at_exit", "run", "twin_property"]

T = TypeVar("T")
P = ParamSpec("P")


class EventLoopThread:
    """An asyncio loop on a daemon thread; ``run`` hands it a coroutine and blocks for the outcome."""

    def __init__(self, name: str = "halfmq-loop") -> None:
        self.loop = asyncio.new_event_loop()
        # run_forever makes the loop the thread's running one, which is all the code on it asks for.
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """The coroutine's result or exception; Ctrl-C (or any other interruption of the caller) cancels it."""
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("a blocking halfmq call was made on the SDK's event-loop thread; use the async class there")
        # The future exists before the work is scheduled, so an interruption at any point of this call cancels it:
        # with run_coroutine_threadsafe, a Ctrl-C landing after the loop started the work but before the future came
        # back left the work running.
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        try:
            self.loop.call_soon_threadsafe(_chain, coro, future)
            concurrent.futures.wait((future,))
        except BaseException:
            # KeyboardInterrupt and friends reach only this thread: stop the work on the loop too.
            future.cancel()
            raise
        # Raised from here rather than through future.result(): a user's traceback
        # gains two frames (this and ``run``), not four.
        if future.cancelled():
            raise concurrent.futures.CancelledError
        error = future.exception()
        if error is not None:
            raise error
        return future.result()

    def stop(self) -> None:
        """For tests: stop the loop and join its thread (the process-wide loop is never stopped)."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


def _chain(coro: Coroutine[Any, Any, T], future: concurrent.futures.Future[T]) -> None:
    """On the loop: run ``coro`` as a task whose outcome becomes ``future``'s (as run_coroutine_threadsafe does); a
    ``future`` the caller already cancelled cancels the task, so the work stops wherever the interruption fell."""
    if future.cancelled():
        coro.close()
        return
    asyncio.futures._chain_future(asyncio.ensure_future(coro), future)  # type: ignore[attr-defined]  # asyncio's own chaining


_shared: EventLoopThread | None = None
_shared_lock = threading.Lock()


def _forget_after_fork() -> None:
    global _shared, _shared_lock  # the child must not use the parent's (threadless) loop
    _shared = None
    _shared_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def shared_loop() -> EventLoopThread:
    """The process's one loop thread, started on first use."""
    global _shared  # one loop per process, made lazily (nothing is built at import time)
    with _shared_lock:
        if _shared is None:
            _shared = EventLoopThread()
        return _shared


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` on the process's loop thread and block for its outcome."""
    return shared_loop().run(coro)


async def cancel(task: asyncio.Future[Any] | None) -> None:
    """Cancel ``task`` (a no-op when None or done) and wait until it has ended, whatever it raised."""
    if task is not None and not task.done():
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


class _Closable(Protocol):
    async def close(self) -> None: ...


# How long a collected or exiting blocking client's close may hold up its thread (closing sends nothing).
CLOSE_AT_EXIT_SECONDS = 1.0


def close_at_exit(owner: object, twin: _Closable) -> None:
    """Close ``twin`` on the loop once ``owner`` is collected or the program exits, whichever comes first.

    A blocking client a program never closes (``SimpleConsumer(url, g, t).ack(...)`` at the end
    of a script) would otherwise leave its connections to the interpreter's teardown, which
    prints the HTTP library's "Unclosed client session" after the program's own output.
    ``twin`` must not refer back to ``owner``, or ``owner`` is only collected at exit.
    """
    weakref.finalize(owner, _close_quietly, twin)


def _close_quietly(twin: _Closable) -> None:
    loop = _shared
    if loop is None:
        return  # no call ever ran on the loop (or this is a forked child): nothing was opened on it
    future = asyncio.run_coroutine_threadsafe(twin.close(), loop.loop)
    if threading.current_thread() is not loop._thread:
        concurrent.futures.wait([future], timeout=CLOSE_AT_EXIT_SECONDS)


class AsyncLifecycle:
    """``async with`` for an async client: leaving the block awaits ``close()``."""

    async def close(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()


A = TypeVar("A", bound=_Closable)


class Blocking(Generic[A]):
    """Base of a blocking client: holds its async twin (``_async``) and runs calls on the loop thread.

    Subclasses build the async object, hand it to ``__init__`` (which also closes it once the blocking client is
    collected, so no subclass can forget to) and take each of its methods and read-only properties as they are:
    ``send = blocking(AsyncProducer.send)``, ``epoch = twin_property(AsyncProducer.epoch)``.
    """

    _async: A

    def __init__(self, twin: A) -> None:
        self._async = twin
        close_at_exit(self, twin)

    def close(self) -> None:
        """Close the connections (idempotent)."""
        run(self._async.close())

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def blocking(method: Callable[Concatenate[A, P], Coroutine[Any, Any, T]]) -> Callable[Concatenate[Blocking[A], P], T]:
    """The blocking twin of the async ``method``: the same parameters and docstring, run on the loop thread."""

    @functools.wraps(method)
    def on_the_loop(self: Blocking[A], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return run(method(self._async, *args, **kwargs))

    return on_the_loop


class twin_property(property, Generic[T]):  # noqa: N801  # used where ``property`` would be: lower case, as it is
    """The blocking twin of the async client's read-only property ``read``: its value, read from the twin (a plain
    attribute read, so not on the loop thread), with the same docstring and type, as ``blocking`` is for methods.

    A property, so help() and the API reference show it as one; ``read`` is the async class's property
    (``AsyncAdminClient.urls``), which a type checker sees as its getter.
    """

    def __init__(self, read: Callable[[Any], T]) -> None:
        getter: Callable[[Any], T] = getattr(read, "fget", read)

        @functools.wraps(getter)
        def on_the_twin(self: Blocking[Any]) -> T:
            return getter(self._async)

        super().__init__(on_the_twin)

    @overload
    def __get__(self, instance: None, owner: type[Any] | None = None) -> Self: ...
    @overload
    def __get__(self, instance: Blocking[Any], owner: type[Any] | None = None) -> T: ...
    def __get__(self, instance: Blocking[Any] | None, owner: type[Any] | None = None) -> T | Self:
        return super().__get__(instance, owner)  # type: ignore[no-any-return]
