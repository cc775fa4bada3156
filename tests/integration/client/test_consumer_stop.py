"""A consumer stops within about a second on an idle topic, and a long poll cut by the stop loses no message.

The long poll (``wait_seconds``, 10 s by default) is not waited out: not by ``run()`` (it returns), and not by the
process (Ctrl-C on the README's consumer exits at once). Whatever a cut poll was handed is never given to the
handler: the consumer nacks it at once when it is still running, else the broker hands it out again (when it sees
the connection gone, or after ``invisible_seconds`` at worst).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from halfmq import AsyncConsumer, Consumer, Message, Producer, message_json
from tests.integration.test_readme_programs import readme_programs
from tests.support.processes import BrokerProcess

pytestmark = pytest.mark.slow

PROMPT_EXIT = 1.5  # seconds from the signal to the process's exit ("within ~1 s", with a loaded machine's slack)

ASYNC_PROGRAM = """
import asyncio, os, signal
from halfmq import AsyncConsumer

async def main():
    consumer = AsyncConsumer(os.environ["HALFMQ_URL"], "audit-async", "IDLE", print)
    for sig in (signal.SIGINT, signal.SIGTERM):
        asyncio.get_running_loop().add_signal_handler(sig, consumer.stop)
    print("running", flush=True)
    await consumer.run()

asyncio.run(main())
"""


def seconds_to_exit_after_sigint(source: str, broker: BrokerProcess, cwd: Path, topic: str) -> tuple[float, str]:
    with Producer(broker.url) as producer:
        producer.create_topic(topic)  # else the consumer retries a missing topic instead of long polling
    program = subprocess.Popen([sys.executable, "-c", source], env={**os.environ, "HALFMQ_URL": broker.url}, cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(2.0)  # started, and inside its first long poll (10 s) on a topic nobody sends to
        assert program.poll() is None, program.communicate()[0]
        signalled = time.monotonic()
        program.send_signal(signal.SIGINT)
        out, _ = program.communicate(timeout=30)
        took = time.monotonic() - signalled
    finally:
        if program.poll() is None:
            program.kill()
    assert program.returncode == 0, out
    return took, out


def test_ctrl_c_ends_the_readme_consumer_within_a_second_on_an_idle_topic(broker: BrokerProcess, tmp_path: Path) -> None:
    consume = readme_programs()[2]
    assert "Consumer(" in consume and "wait_seconds" not in consume  # the default 10 s long poll
    took, out = seconds_to_exit_after_sigint(consume, broker, tmp_path, "ORDERS")
    assert took < PROMPT_EXIT, f"took {took:.1f}s to exit\n{out}"
    # The exit cut the long poll; what the broker would have handed it goes to the group's next consumer.
    with Producer(broker.url) as producer:
        producer.send("ORDERS", {"order_id": "after-exit"})
    received: list[Message] = []
    with Consumer(broker.url, "audit", "ORDERS", received.append, wait_seconds=1) as after:
        threading.Thread(target=after.run, daemon=True).start()
        deadline = time.monotonic() + 40  # the worst case: the README consumer's invisible_seconds (30 s)
        while not received and time.monotonic() < deadline:
            time.sleep(0.05)
    assert [message_json(m)["order_id"] for m in received] == ["after-exit"], out


def test_a_signal_ends_an_async_consumer_within_a_second_on_an_idle_topic(broker: BrokerProcess, tmp_path: Path) -> None:
    took, out = seconds_to_exit_after_sigint(ASYNC_PROGRAM, broker, tmp_path, "IDLE")
    assert took < PROMPT_EXIT, f"took {took:.1f}s to exit\n{out}"


def test_a_message_reaching_a_poll_cut_by_stop_is_not_handled_and_goes_to_the_next_consumer_at_once(
        broker: BrokerProcess) -> None:
    handled: list[str] = []
    with Producer(broker.url) as producer:
        producer.create_topic("CUT")
    first = Consumer(broker.url, "cut", "CUT", lambda m: handled.append(message_json(m)["n"]), invisible_seconds=60)
    runner = threading.Thread(target=first.run)
    runner.start()
    time.sleep(1.0)  # inside its long poll
    stopped = time.monotonic()
    first.stop()
    runner.join(5)
    assert not runner.is_alive() and time.monotonic() - stopped < 1.0
    with Producer(broker.url) as producer:
        producer.send("CUT", {"n": "late"})  # the cut poll, still open on the broker, is handed this one
    received: list[Message] = []
    second = Consumer(broker.url, "cut", "CUT", received.append, wait_seconds=1)
    threading.Thread(target=second.run, daemon=True).start()
    deadline = time.monotonic() + 20  # far less than invisible_seconds: released by a nack, not by its timer
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    second.close()
    first.close()
    assert [message_json(m)["n"] for m in received] == ["late"] and handled == []


def test_a_message_reaching_an_async_poll_cut_by_stop_is_not_handled_and_is_received_again(broker: BrokerProcess) -> None:
    handled: list[str] = []

    with Producer(broker.url) as producer:
        producer.create_topic("CUT_ASYNC")

    async def scenario() -> list[str]:
        first = AsyncConsumer(broker.url, "cut-async", "CUT_ASYNC", lambda m: handled.append(message_json(m)["n"]),
                              invisible_seconds=3)
        running = asyncio.ensure_future(first.run())
        await asyncio.sleep(1.0)
        stopped = time.monotonic()
        first.stop()
        await asyncio.wait_for(running, 1.0)
        assert time.monotonic() - stopped < 1.0
        await first.close()
        with Producer(broker.url) as producer:
            producer.send("CUT_ASYNC", {"n": "late"})
        received: list[str] = []
        arrived = asyncio.Event()

        def take(message: Message) -> None:
            received.append(message_json(message)["n"])
            arrived.set()

        second = AsyncConsumer(broker.url, "cut-async", "CUT_ASYNC", take, wait_seconds=1)
        again = asyncio.ensure_future(second.run())
        await asyncio.wait_for(arrived.wait(), 20)
        second.stop()
        await again
        await second.close()
        return received

    assert asyncio.run(scenario()) == ["late"] and handled == []
