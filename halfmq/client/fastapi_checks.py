"""FastAPI glue for transactional producers: the check endpoint, and the producer in the app's lifespan.

Needs FastAPI (``pip install 'halfmq[fastapi]'``). With a barrier (``halfmq.client.sqlalchemy``)::

    barrier = TransactionBarrier(engine)
    producer = AsyncTransactionProducer(broker_url, "orders", barrier, check_url="http://me:8000/halfmq/check")
    app = FastAPI(lifespan=producer_lifespan(producer, barrier))
    mount_check_endpoint(app, producer, check_secret=secret)

``mount_check_endpoint`` routes the exact path (no trailing-slash redirect, which the broker
does not follow) to ``producer.check_app()``: the same endpoint, signed when given the producer
group's ``check_secret`` (``halfmq.client.check_app``). ``producer_lifespan`` starts the producer
(registering its check URL) and the barriers' record cleanup with the app, and closes them after.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol

from fastapi import FastAPI

from .async_transaction_producer import AsyncTransactionProducer
from .check_app import CheckApp

__all__ = ["DEFAULT_CHECK_PATH", "mount_check_endpoint", "producer_lifespan"]

DEFAULT_CHECK_PATH = "/halfmq/check"


class _Startable(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None: ...


def mount_check_endpoint(app: FastAPI, producer: AsyncTransactionProducer, path: str = DEFAULT_CHECK_PATH,
                         *, check_secret: str | bytes | None = None, **options: Any) -> CheckApp:
    """Serve ``producer``'s check-backs at ``path`` (POST only); the producer's ``check_url`` must end in it."""
    if producer.check_url is not None and not producer.check_url.rstrip().endswith(path):
        raise ValueError(f"the producer's check_url {producer.check_url!r} does not end in {path!r}: the broker would dial elsewhere")
    check_app = producer.check_app(check_secret=check_secret, **options)
    # Starlette serves a non-function endpoint as an ASGI app; its annotation names only request handlers.
    app.add_route(path, check_app, methods=["POST"])  # type: ignore[arg-type]
    return check_app


def producer_lifespan(producer: AsyncTransactionProducer, *barriers: _Startable) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """A FastAPI ``lifespan`` that starts ``producer`` and ``barriers`` with the app and closes them after.

    A broker that is down at start is logged, not fatal (``AsyncTransactionProducer.start``): the
    heartbeat registers the producer once it is up, and the app serves meanwhile. A broker that
    refuses the check URL is fatal.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await producer.start()
        for barrier in barriers:
            await barrier.start()
        try:
            yield
        finally:
            for barrier in reversed(barriers):
                await barrier.close()
            await producer.close()

    return lifespan
