"""Serving an ASGI app with uvicorn under halfmq's HTTP limits: the broker's and the services' one way.

A server without them keeps a connection that never completes its request head open for ever, so
a thousand half-sent heads hold a thousand descriptors, and near the open-file limit the server stops
answering anyone (issue 30, item 8). Every ``halfmq`` server runs through ``serve_uvicorn``:

- a deadline for each request head, from the moment a connection waits for one (fresh or kept
  alive) until the head is complete, and a cap on its size (``uvicorn_head_limits``);
- a cap on connections and tasks (``max_connections``: past it uvicorn answers 503), a listen
  backlog for bursts, and an open-file limit raised to fit the cap.

The limits come from the component's settings under the same names (``HALFMQ_BROKER_*``,
``ORDER_*``, ``CREDIT_*``: ``REQUEST_HEAD_TIMEOUT``, ``MAX_REQUEST_HEAD_BYTES``, ``MAX_CONNECTIONS``,
``LISTEN_BACKLOG``).
"""

from __future__ import annotations

import logging
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)
SPARE_FILES = 1024  # the broker's segments and queues, a service's database files, sockets out: beside the connections in


class HasHttpLimits(Protocol):
    """The settings fields the limits are read from (BrokerSettings, ServiceSettings)."""

    request_head_timeout: float
    max_request_head_bytes: int
    max_connections: int
    listen_backlog: int


@dataclass(frozen=True)
class HttpLimits:
    head_timeout: float
    max_head_bytes: int
    max_connections: int
    listen_backlog: int

    @classmethod
    def of(cls, settings: HasHttpLimits) -> HttpLimits:
        return cls(settings.request_head_timeout, settings.max_request_head_bytes, settings.max_connections, settings.listen_backlog)


def raise_open_file_limit(wanted: int) -> None:
    """Every connection is a file descriptor; the soft limit (often 1024) would cap connections long before max_connections."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft != resource.RLIM_INFINITY and soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    if target < wanted:
        log.warning("open-file limit %d is below max_connections + %d; raise it (ulimit -n) to serve that many", hard, SPARE_FILES)


def serve_uvicorn(app: Any, *, host: str, port: int, limits: HttpLimits, log_level: str,
                  tls_cert_file: Path | None = None, tls_key_file: Path | None = None, server_class: type | None = None) -> None:
    """Serve ``app`` until SIGTERM/SIGINT; ``server_class`` is a ``uvicorn.Server`` subclass with its own exit handling."""
    import uvicorn

    from .uvicorn_head_limits import head_limited_httptools

    raise_open_file_limit(limits.max_connections + SPARE_FILES)
    config = uvicorn.Config(
        app, host=host, port=port, log_level=log_level.lower(), access_log=False, loop="uvloop", timeout_graceful_shutdown=5,
        http=head_limited_httptools(limits.head_timeout, limits.max_head_bytes),
        backlog=limits.listen_backlog, limit_concurrency=limits.max_connections,
        timeout_keep_alive=limits.head_timeout,  # type: ignore[arg-type]  # a float works
        proxy_headers=False,  # no proxy in front by default; the middleware costs ~2 % per request
        ssl_certfile=tls_cert_file, ssl_keyfile=tls_key_file,
    )
    (server_class or uvicorn.Server)(config).run()
