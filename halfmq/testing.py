"""A real halfmq broker inside your test process: halfmq's answer to dramatiq's StubBroker.

Not a fake: ``InProcessBroker`` opens the broker's own store in a temporary
directory and serves the broker's own ASGI app with uvicorn on a background
thread, on a free loopback port, so the SDK in your tests talks HTTP to exactly
what it will talk to in production (problems, retries, check-backs included)::

    from halfmq import Producer
    from halfmq.testing import InProcessBroker

    with InProcessBroker() as broker:
        with Producer(broker.url) as producer:
            producer.send("ORDERS", {"order_id": "o-1"})

With pytest the ``halfmq_broker`` fixture does this per test (``halfmq.pytest_plugin``,
registered by the ``pytest11`` entry point: nothing to import or configure).
``ServedApp`` serves any other ASGI app the same way, such as the check-back
endpoint of a ``TransactionProducer`` (``producer.check_app()``).

Only tests import this module, and it needs the server side: ``pip install 'halfmq[broker]'``.
"""

from __future__ import annotations

import asyncio
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

try:
    import uvicorn

    from halfmq.broker.config import BrokerSettings
    from halfmq.broker.runtime import BrokerRuntime
    from halfmq.broker.runtime.app import create_app
except ModuleNotFoundError as exc:  # the SDK alone is installed
    raise ModuleNotFoundError(
        f"halfmq.testing runs the real broker in your tests and needs the broker extra ({exc.name} is missing): "
        "pip install 'halfmq[broker]'", name=exc.name,
    ) from exc

__all__ = ["InProcessBroker", "ServedApp"]


class ServedApp:
    """An ASGI app served by uvicorn on a background thread at ``url`` (127.0.0.1, a free port).

    The socket is bound before uvicorn starts, so the port is known up front and
    nobody can take it in between. ``on_stop`` runs on the server's event loop
    when ``stop()`` begins (the broker ends its open long polls there).
    """

    def __init__(self, app: Any, *, sock: socket.socket | None = None, lifespan: str = "auto",
                 on_stop: Callable[[], None] | None = None) -> None:
        self._sock = sock or loopback_socket()
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, lifespan=lifespan, log_level="warning", access_log=False, timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self._on_stop = on_stop
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), name=f"halfmq-served-{self.port}", daemon=True)

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        await self.server.serve(sockets=[self._sock])

    def start(self, timeout: float = 10.0) -> Self:
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive():
                raise RuntimeError("the server exited before it started (its lifespan startup failed; see the log)")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the server did not start within {timeout}s")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._on_stop is not None and self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._on_stop)
        self.server.should_exit = True
        self._thread.join(10)
        self._sock.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def loopback_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class InProcessBroker:
    """The real broker on a temporary data directory (or ``data_dir``), served at ``url`` while in use.

    Keyword arguments are broker settings (``BrokerSettings``, the ``HALFMQ_BROKER_*``
    variables without the prefix, lower case), e.g. ``transaction_timeout=1`` to see
    check-backs within seconds. A temporary directory is removed on ``stop()``.
    """

    def __init__(self, data_dir: Path | str | None = None, **settings: Any) -> None:
        self._temporary = None if data_dir is not None else tempfile.TemporaryDirectory(prefix="halfmq-test-broker-")
        sock = loopback_socket()
        try:
            self.settings = BrokerSettings(host="127.0.0.1", port=sock.getsockname()[1],
                                           data_dir=Path(data_dir or self._temporary.name), **settings)  # type: ignore[union-attr]
            self.runtime = BrokerRuntime.open(self.settings)
        except BaseException:
            sock.close()
            self._cleanup()
            raise
        self._served = ServedApp(create_app(self.settings, self.runtime), sock=sock, lifespan="on",
                                 on_stop=self.runtime.delivery.close)
        self.url = self._served.url
        self.port = self._served.port

    def start(self, timeout: float = 30.0) -> Self:
        try:
            self._served.start(timeout)
        except BaseException:
            self.runtime.store.close()
            self._cleanup()
            raise
        return self

    def stop(self) -> None:
        """End open long polls, stop serving, close the store; idempotent."""
        self._served.stop()
        self.runtime.store.close()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._temporary is not None:
            self._temporary.cleanup()
            self._temporary = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
