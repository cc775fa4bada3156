"""Serve a producer's check endpoint with uvicorn on a daemon thread, for a program that has no web app of its own.

``serve_checks(producer.check_app(), port)`` binds the port first, so a port that is taken is an error
naming it (``CheckPortBusy``) rather than a server thread that dies while the program waits for it to
start. A service that has a web app mounts the endpoint there instead (``halfmq.client.fastapi_checks``).
Needs uvicorn (``pip install uvicorn``); the SDK itself does not.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from typing import Any

__all__ = ["CheckPortBusy", "CheckServer", "serve_checks"]


class CheckPortBusy(OSError):
    """The check endpoint's port is taken by another program."""


class CheckServer:
    """A started uvicorn server on a daemon thread; ``stop()`` ends it (or the process's exit does)."""

    def __init__(self, server: Any, thread: threading.Thread, sock: socket.socket) -> None:
        self.server, self._thread, self._sock = server, thread, sock
        self.port: int = sock.getsockname()[1]

    def stop(self, timeout: float = 10.0) -> None:
        """Ask uvicorn to exit and wait up to ``timeout`` seconds, so a test or a restart gets the port back."""
        self.server.should_exit = True
        self._thread.join(timeout)
        self._sock.close()


def bind_check_port(port: int, host: str = "127.0.0.1") -> socket.socket:
    """A listening-ready socket on ``host:port``, or ``CheckPortBusy`` naming the port."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart may reuse a port in TIME_WAIT
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CheckPortBusy(exc.errno, f"the check endpoint's port {port} on {host} is in use ({exc.strerror}): "
                                       "stop what listens there or serve the checks on another port") from exc
    return sock


def serve_checks(app: Any, port: int, host: str = "127.0.0.1", *, timeout: float = 10.0) -> CheckServer:
    """Serve ``app`` (``producer.check_app()``) at ``host:port`` until the process ends; return once it accepts.

    Raises ``CheckPortBusy`` when the port is taken, and ``RuntimeError`` when uvicorn stops before it started.
    """
    import uvicorn  # the caller's dependency, not the SDK's

    sock = bind_check_port(port, host)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
    thread = threading.Thread(target=asyncio.run, args=(server.serve(sockets=[sock]),),
                              name=f"halfmq-checks-{port}", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise RuntimeError(f"the check endpoint on {host}:{port} did not start (see uvicorn's log above)")
        time.sleep(0.01)
    return CheckServer(server, thread, sock)
