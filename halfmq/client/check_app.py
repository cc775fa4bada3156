"""The check-back endpoint a producing service mounts: a plain ASGI application.

The broker POSTs ``{transaction_id, producer_group, check_times, message}`` to
the ``check_url`` a producer registered, for a transaction whose end it never
received, and expects ``200 {"state": "commit" | "rollback" | "unknown"}``.
This app answers with the listener's ``check_local_transaction``.

Mounting it in a FastAPI (or Starlette) service::

    producer = AsyncTransactionProducer(
        "http://broker:8080", "order-producers", listener,
        check_url="http://127.0.0.1:8001/halfmq/check/",   # note the trailing slash
    )
    app.mount("/halfmq/check", producer.check_app())

Mind the slash: Starlette's ``Mount`` serves ``/halfmq/check/`` and answers
``/halfmq/check`` with a 307 redirect, which the broker deliberately does not
follow, so a slash-less ``check_url`` would make every check fail (and the
transaction be discarded after ``transaction_check_max`` checks). To keep the
URL ``http://127.0.0.1:8001/halfmq/check``, route the exact path instead::

    app.add_route("/halfmq/check", producer.check_app())

(Starlette treats a non-function endpoint as an ASGI app.)

The ``check_url`` is the address *the broker* dials, so it must name this
service as the broker sees it (``http://order:8001/halfmq/check`` inside the
compose network) and its host must be on the broker's ``check_url_allow``.
Without a producer at hand, ``CheckApp(listener, producer_group=...)`` builds
the same app. Any ASGI server can also serve it on its own (``uvicorn.run(app)``);
lifespan events are answered, and a mounted app, which gets none, needs none.

Signed check-backs: give ``check_secret`` (the producer group's secret from
the broker's operator, ``halfmq admin check-secret --group G``) and the app
refuses, with 401, any request the broker did not sign, one whose body was
changed, one signed more than ``signature_window`` seconds away from now, and
one it has already answered (``broker.check_signing``). Without a secret it
answers anyone who can reach it, which is only fit for a loopback broker
without auth.

Answers: 200 with the state (a listener that raises, or answers something
that is not a state, gives ``unknown`` and a log line: the broker asks again
later); 400 problem+json for a body that is not a check request; 403 for a
check of another producer group; 405 for anything but POST; 413 for a body
over ``max_body_bytes``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import msgspec

from halfmq.asgi_body import ClientGone, read_body
from halfmq.check_signing import DEFAULT_WINDOW, SIGNATURE_HEADER, TIMESTAMP_HEADER, CheckVerifier
from halfmq.errors import (
    PROBLEM_JSON,
    BrokerError,
    CheckSignatureInvalid,
    InvalidRequest,
    MalformedJson,
    MessageTooLarge,
    MethodNotAllowed,
    ProducerGroupMismatch,
    RequestTooLarge,
)
from halfmq.wire import CheckRequest, decode

from .listener import AnyTransactionListener, LocalTransactionState, call_listener, coerce_local_state
from .tracing import check_answered

__all__ = ["CheckApp"]

log = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

# The broker's messages are at most 4 MiB by default; base64 and the envelope add a third.
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024


class CheckApp:
    """ASGI app answering the broker's check-backs with ``listener.check_local_transaction``.

    A blocking listener runs in a worker thread; an async one is awaited on
    the server's loop. With ``producer_group`` set, checks for another group
    are refused (403), which catches two producers registered with one URL.
    """

    def __init__(self, listener: AnyTransactionListener, *, producer_group: str | None = None, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
                 check_secret: str | bytes | None = None, signature_window: float = DEFAULT_WINDOW) -> None:
        if not callable(getattr(listener, "check_local_transaction", None)):
            raise TypeError("the listener has no check_local_transaction method")
        self.listener = listener
        self.producer_group = producer_group
        self.max_body_bytes = max_body_bytes
        secret = check_secret.encode() if isinstance(check_secret, str) else check_secret
        self._verifier = CheckVerifier(secret, signature_window) if secret else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry: HTTP is a check-back, lifespan is answered (a server waits for it), websockets are closed."""
        kind = scope["type"]
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await _lifespan(receive, send)
        elif kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
        # Any other scope type is not ours to answer.

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            state = await check_answered(scope, await self._check_request(scope, receive), self._ask)
        except ClientGone:
            return  # the broker hung up; nobody to answer
        except BrokerError as exc:
            allow = [(b"allow", b"POST")] if isinstance(exc, MethodNotAllowed) else None
            await _respond(send, exc.status, msgspec.json.encode(exc.to_problem()), PROBLEM_JSON.encode(), allow)
            return
        await _respond(send, 200, msgspec.json.encode({"state": state.value}), b"application/json")

    async def _check_request(self, scope: Scope, receive: Receive) -> CheckRequest:
        """The request's check, read and verified, or the ``BrokerError`` to answer it with."""
        if scope.get("method") != "POST":
            raise MethodNotAllowed(f"{scope.get('method')} is not allowed here; the broker POSTs check requests")
        try:
            body = await read_body(receive, self.max_body_bytes)
        except RequestTooLarge:
            raise MessageTooLarge(f"a check request is at most {self.max_body_bytes} bytes") from None
        if self._verifier is not None:
            try:
                self._verifier.verify(_header(scope, TIMESTAMP_HEADER), _header(scope, SIGNATURE_HEADER), body)
            except CheckSignatureInvalid as exc:
                log.warning("refused a check request: %s", exc.detail)
                raise
        try:
            data = msgspec.json.decode(body)
        except msgspec.DecodeError as exc:
            raise MalformedJson(f"the body is not JSON: {exc}") from None
        try:
            request = decode(data, CheckRequest)
        except ValueError as exc:
            raise InvalidRequest(f"the body is not a check request: {str(exc)[:1000]}") from None
        if self.producer_group is not None and request.producer_group != self.producer_group:
            log.warning("check of transaction %s is for producer group %r, but this endpoint serves %r",
                        request.transaction_id, request.producer_group, self.producer_group)
            raise ProducerGroupMismatch(f"this endpoint answers for producer group {self.producer_group!r}, not {request.producer_group!r}")
        return request

    async def _ask(self, request: CheckRequest) -> LocalTransactionState:
        try:
            answer = await call_listener(self.listener.check_local_transaction, request.message)
        except Exception:  # BaseException (cancellation, crashes) is not ours to hide
            log.exception("check_local_transaction failed for transaction %s (check %d); answering unknown", request.transaction_id, request.check_times)
            return LocalTransactionState.UNKNOW
        state = coerce_local_state(answer, where="check_local_transaction")
        log.info("check of transaction %s (check %d): %s", request.transaction_id, request.check_times, state.value)
        return state


def _header(scope: Scope, name: str) -> str | None:
    value = dict(scope.get("headers", ())).get(name.encode())  # ASGI servers lowercase header names, as ours are
    return None if value is None else str(value.decode("latin-1"))


async def _lifespan(receive: Receive, send: Send) -> None:
    # Served on its own, the app gets startup, then shutdown; it has nothing to
    # set up, but a server waits for the answers.
    while (await receive())["type"] != "lifespan.shutdown":
        await send({"type": "lifespan.startup.complete"})
    await send({"type": "lifespan.shutdown.complete"})


async def _respond(send: Send, status: int, body: bytes, content_type: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *(extra or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
