"""Serving the broker's app: uvicorn (the default) or granian's embedded server.

Both run the app on this process's asyncio loop (uvloop), so the store, the
group-commit thread and every request share one process: kill -9 of the pid a
supervisor started kills the broker, and the data-dir lock goes with it.
uvicorn is the default because it runs that way in a mode its authors support
for production; granian's embedded mode (``HALFMQ_BROKER_HTTP_SERVER=granian``)
is faster but marked experimental upstream, and granian's supported mode forks
a worker process (docs/decisions/018-production-http-server.md).
The broker's HTTP tests run on both.

Both get the same connection limits from the settings (uvicorn through ``http_serving``, which the
order and credit services are served by too): thousands of connections
(consumers long-poll, so most are idle), a listen backlog for bursts, and a
deadline for each request head that sheds idle and trickling clients.
"""

from __future__ import annotations

import asyncio
import errno
import gc
import logging
import signal
import socket
from collections.abc import Callable
from typing import Any

from halfmq.broker.config import BrokerSettings

from .http_serving import SPARE_FILES, HttpLimits, raise_open_file_limit, serve_uvicorn

log = logging.getLogger(__name__)


def tune_gc() -> None:
    """Collect garbage far less often than CPython's default (a gen-0 pass every 700 allocations).

    A batch of 100 messages allocates a few thousand objects, so at the default a
    collection ran every request or two, and the recovered transaction index made
    each older-generation pass long: profiled, the collector took ~20 % of a batch
    send. Freezing moves everything alive after recovery out of the collector's sight.
    Measured on the broker (wrk, 64 in flight): batch sends +40 %, half+end pairs +15 %.
    """
    gc.freeze()
    gc.set_threshold(50_000, 50, 1000)


class PortInUse(Exception):
    pass


def serve(app: Any, end_long_polls: Callable[[], None], settings: BrokerSettings) -> None:
    """Serve until SIGTERM/SIGINT; PortInUse if something already listens on the port. ``end_long_polls`` runs on the
    loop as a stop signal arrives, so idle consumers' long polls do not hold the shutdown up."""
    check_port_free(settings.host, settings.port)
    tune_gc()
    if settings.http_server == "granian":
        raise_open_file_limit(settings.max_connections + SPARE_FILES)
        _serve_granian(app, end_long_polls, settings)
    else:
        _serve_uvicorn(app, end_long_polls, settings)


def check_port_free(host: str, port: int) -> None:
    """Granian binds with SO_REUSEPORT, so a second broker on a taken port would share it silently
    with the first; a probe bound without it fails, and both servers refuse a taken port alike."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUse(f"{host}:{port} is already in use") from None
            raise


def _serve_uvicorn(app: Any, end_long_polls: Callable[[], None], settings: BrokerSettings) -> None:
    import uvicorn

    class BrokerServer(uvicorn.Server):
        """uvicorn, but a stop signal also ends open long polls so shutdown is not held up by idle consumers."""

        def handle_exit(self, sig, frame) -> None:
            try:
                asyncio.get_running_loop().call_soon_threadsafe(end_long_polls)
            except RuntimeError:
                pass
            super().handle_exit(sig, frame)

    serve_uvicorn(app, host=settings.host, port=settings.port, limits=HttpLimits.of(settings), log_level=settings.log_level,
                  tls_cert_file=settings.tls_cert_file, tls_key_file=settings.tls_key_file, server_class=BrokerServer)


def _serve_granian(app: Any, end_long_polls: Callable[[], None], settings: BrokerSettings) -> None:
    import uvloop
    from granian.constants import HTTPModes, Interfaces
    from granian.http import HTTP1Settings
    from granian.log import LogLevels
    from granian.server.embed import Server

    to_root = {"handlers": [], "propagate": True}  # granian's lines in the broker's own log format

    async def run() -> None:
        # HTTP/1 only: in "auto" hyper-util first sniffs for an HTTP/2 preface with no deadline, so a
        # connection that sends nothing would never time out. backpressure is granian's cap on open
        # connections per worker (a permit held for each connection's life), 128 unless told.
        head = HTTP1Settings(header_read_timeout=round(settings.request_head_timeout * 1000), keep_alive=True,
                             max_buffer_size=settings.max_request_head_bytes)
        server = Server(app, address=settings.host, port=settings.port, interface=Interfaces.ASGI,
                        http=HTTPModes.http1, http1_settings=head, backlog=settings.listen_backlog,
                        backpressure=settings.max_connections, websockets=settings.cluster is not None,  # (a set's replication stream)
                        log_access=False, log_level=LogLevels(settings.log_level.lower()),
                        ssl_cert=settings.tls_cert_file, ssl_key=settings.tls_key_file,
                        log_dictconfig={"loggers": {"_granian": dict(to_root), "granian.access": dict(to_root)}})
        loop = asyncio.get_running_loop()

        def stop() -> None:
            end_long_polls()
            server.stop()

        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop)
        await server.serve()

    uvloop.run(run())
