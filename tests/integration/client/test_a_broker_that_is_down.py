"""What a person sees when the broker is down: one line that names the broker and the cause.

Each case is a tiny program run as its own process against a closed port, as a user would run
it, so the traceback printed is the real one (no pytest rewriting, no captured logging).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from .test_client_against_a_scripted_server import closed_port

pytestmark = pytest.mark.slow

PROGRAMS = {
    "Producer": """
        from halfmq import Producer
        Producer(URL).send("orders", "hello")
    """,
    "AsyncProducer": """
        import asyncio
        from halfmq import AsyncProducer
        async def main():
            async with AsyncProducer(URL) as producer:
                await producer.send("orders", "hello")
        asyncio.run(main())
    """,
    "SimpleConsumer": """
        from halfmq.client.simple_consumer import SimpleConsumer
        SimpleConsumer(URL, "billing", "orders").ack(["handle"])
    """,
    "AsyncSimpleConsumer": """
        import asyncio
        from halfmq.client.simple_consumer import AsyncSimpleConsumer
        async def main():
            async with AsyncSimpleConsumer(URL, "billing", "orders") as consumer:
                await consumer.ack(["handle"])
        asyncio.run(main())
    """,
    "TransactionProducer": """
        from halfmq import TransactionProducer, LocalTransactionState
        class Listener:
            def execute_local_transaction(self, message, arg):
                return LocalTransactionState.COMMIT_MESSAGE
            def check_local_transaction(self, message):
                return LocalTransactionState.COMMIT_MESSAGE
        with TransactionProducer(URL, "orders-pg", Listener(), check_backs=False) as producer:
            producer.send_in_transaction("orders", "hello")
    """,
    "AsyncTransactionProducer": """
        import asyncio
        from halfmq import AsyncTransactionProducer, LocalTransactionState
        class Listener:
            async def execute_local_transaction(self, message, arg):
                return LocalTransactionState.COMMIT_MESSAGE
            async def check_local_transaction(self, message):
                return LocalTransactionState.COMMIT_MESSAGE
        async def main():
            async with AsyncTransactionProducer(URL, "orders-pg", Listener(), check_backs=False) as producer:
                await producer.send_in_transaction("orders", "hello")
        asyncio.run(main())
    """,
}
CONSUMER_LOOPS = {
    "Consumer": """
        import logging, threading
        from halfmq import Consumer
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
        consumer = Consumer(URL, "billing", "orders", lambda message: None, wait_seconds=0)
        threading.Timer(1.0, consumer.stop).start()
        consumer.run()
    """,
    "AsyncConsumer": """
        import asyncio, logging
        from halfmq import AsyncConsumer
        logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
        async def main():
            async with AsyncConsumer(URL, "billing", "orders", lambda message: None, wait_seconds=0) as consumer:
                asyncio.get_running_loop().call_later(1.0, consumer.stop)
                await consumer.run()
        asyncio.run(main())
    """,
}
NOISE = ("tenacity", "httpcore", "httpx", "urllib3", "aiohttp", "anyio", "The above exception", "During handling")


def _run(program: str, url: str) -> subprocess.CompletedProcess[str]:
    source = f"URL = {url!r}\n" + textwrap.dedent(program)
    return subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("client", sorted(PROGRAMS))
def test_a_broker_that_is_down_ends_the_program_with_one_line_naming_it_and_the_cause(client: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    done = _run(PROGRAMS[client], url)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == f"halfmq.client.BrokerUnavailable: cannot reach the broker at {url} (connection refused) after 4 attempts", done.stderr
    traceback = "\n".join(lines[next(i for i, line in enumerate(lines) if line.startswith("Traceback")):])
    # The program, asyncio.run's own three, and the SDK's call chain (a transaction producer's steps run
    # through a generator and its driver: three frames more, all halfmq's; numbering its half sends, one more).
    assert traceback.count('File "') <= 12, done.stderr
    assert not [word for word in NOISE if word in traceback], done.stderr


@pytest.mark.parametrize("flavour", ["Consumer", "AsyncConsumer"])
def test_a_consumer_loop_logs_one_line_per_failed_receive_and_keeps_going(flavour: str) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    program = CONSUMER_LOOPS[flavour]
    done = _run(program, url)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) >= 2, done.stderr
    for line in lines:
        assert line.startswith("WARNING receive from orders failed (cannot reach the broker at "), done.stderr
        assert "(connection refused)" in line, done.stderr
