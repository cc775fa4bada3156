"""The blocking classes' event-loop thread: results, errors, interruption, fork and the self-wait guard."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import threading

import pytest

from halfmq.client.loop_thread import AsyncLifecycle, Blocking, EventLoopThread, close_at_exit, run, shared_loop


@pytest.fixture
def loop_thread():
    thread = EventLoopThread(name="test-loop")
    yield thread
    thread.stop()


async def _answer(value: int) -> tuple[int, str]:
    await asyncio.sleep(0)
    return value, threading.current_thread().name


def test_a_coroutine_runs_on_the_loop_thread_and_its_result_comes_back(loop_thread):
    assert loop_thread.run(_answer(7)) == (7, "test-loop")


def test_a_coroutine_s_exception_reaches_the_caller(loop_thread):
    async def fail() -> None:
        raise KeyError("gone")

    with pytest.raises(KeyError, match="gone"):
        loop_thread.run(fail())


def test_many_threads_meet_on_one_loop(loop_thread):
    results: list[tuple[int, str]] = []
    threads = [threading.Thread(target=lambda i=i: results.append(loop_thread.run(_answer(i)))) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == [(i, "test-loop") for i in range(16)]


def test_a_blocking_call_on_the_loop_thread_raises_instead_of_waiting_for_itself(loop_thread):
    async def nested() -> int:
        return loop_thread.run(_answer(1))[0]

    with pytest.raises(RuntimeError, match="event-loop thread"):
        loop_thread.run(nested())


class _Interrupted(BaseException):
    pass


def test_an_interrupted_caller_cancels_the_work_on_the_loop(loop_thread):
    started, cancelled = threading.Event(), threading.Event()

    async def forever() -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    def interrupt(*_: object) -> None:
        raise _Interrupted

    caller = threading.get_ident()

    def interrupt_the_caller_once_the_work_runs() -> None:
        if started.wait(10):  # a hang guard, not a measurement
            signal.pthread_kill(caller, signal.SIGALRM)

    previous = signal.signal(signal.SIGALRM, interrupt)
    interrupter = threading.Thread(target=interrupt_the_caller_once_the_work_runs)
    interrupter.start()
    try:
        with pytest.raises(_Interrupted):
            loop_thread.run(forever())
    finally:
        interrupter.join()
        signal.signal(signal.SIGALRM, previous)
    assert cancelled.wait(5)


def test_the_shared_loop_is_one_per_process_and_fresh_in_a_forked_child():
    parent = shared_loop()
    assert shared_loop() is parent
    assert run(_answer(3))[0] == 3
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it must get a working loop of its own
        try:
            ok = shared_loop() is not parent and run(_answer(5))[0] == 5
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.waitpid(pid, 0)
    assert answer == b"1"


class _AsyncThing(AsyncLifecycle):
    def __init__(self) -> None:
        self.closed = 0

    async def close(self) -> None:
        self.closed += 1


class _BlockingThing(Blocking[_AsyncThing]):
    def __init__(self) -> None:
        self._async = _AsyncThing()


def test_leaving_a_with_block_closes_the_async_twin_on_the_loop():
    with _BlockingThing() as thing:
        pass
    assert thing._async.closed == 1


async def test_leaving_an_async_with_block_awaits_close():
    async with _AsyncThing() as thing:
        pass
    assert thing.closed == 1


def test_a_blocking_client_never_closed_has_its_twin_closed_on_the_loop_once_collected():
    thing = _BlockingThing()
    twin = thing._async
    close_at_exit(thing, twin)
    run(_answer(0))  # the program has used the loop
    del thing
    gc.collect()
    assert twin.closed == 1


def test_a_blocking_transaction_producer_never_closed_has_its_twin_closed_once_collected(monkeypatch):
    from halfmq.client import TransactionProducer
    from halfmq.client.async_transaction_producer import AsyncTransactionProducer

    closed: list[AsyncTransactionProducer] = []

    async def close(self: AsyncTransactionProducer) -> None:
        closed.append(self)

    monkeypatch.setattr(AsyncTransactionProducer, "close", close)

    class Listener:
        def execute_local_transaction(self, message, arg):
            raise AssertionError("never called")

        def check_local_transaction(self, message):
            raise AssertionError("never called")

    producer = TransactionProducer("http://127.0.0.1:9", "g", Listener(), check_backs=False)
    twin = producer._async
    run(_answer(0))  # the program has used the loop
    del producer
    gc.collect()
    assert closed == [twin]
