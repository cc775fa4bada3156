"""One request frame in, one answer frame out: the header, the table's entry, the version check, the handler, and
the answer encoded with the response header its version calls for (the bytes in and out are listener.py's).

A version outside the table is answered UNSUPPORTED_VERSION in the API's own shape; the connection is never dropped
for it. Three cases cannot be answered in a shape the client parses, and get the smallest answer that can be
(the correlation id and UNSUPPORTED_VERSION), never a closed connection: ApiVersions at a version the front does not
know gets ApiVersions v0 with the table, as KIP-511 asks; an API key outside the table, and a version of a table API
newer than kafka-python's schema, get a response header v0 and the error code alone. Only a client that ignored
ApiVersions sends either.
"""

from __future__ import annotations

import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka.errors import UnknownError
from kafka.protocol.api_key import ApiKey

from .api_table import API_TABLE, Api, api_versions_response, by_key
from .errors import InvalidRequest, KafkaRefusal, NotYetServed, ServedElsewhere, UnsupportedVersion
from .request_header import RequestHeader, parse_request_header
from .sasl import NotAuthenticated, must_authenticate_first

log = logging.getLogger(__name__)

Handler = Callable[[Any, RequestHeader], Awaitable[Any]]
"""(the decoded request, its header) -> the response (kafka-python's class) or ``Later`` (the response once a wait
ends), or a KafkaRefusal raised. Async: the use cases it will call are (a send waits for its flush)."""

BARE_ERROR = struct.Struct(">ih")
UNKNOWN_SERVER_ERROR = int(UnknownError.errno)  # -1
DECODE_ERRORS = (ValueError, IndexError, struct.error, EOFError, UnicodeDecodeError)
"""What kafka-python's decoders raise on a body that does not match its schema (a length past the end, bad UTF-8…)."""


async def not_yet(request: Any, header: RequestHeader) -> Any:
    """The handler of every API whose real one is not written yet (issue 47: after issue 43's use cases)."""
    raise NotYetServed(f"API {header.api_key} is not served yet")


class Dispatcher:
    """Answers request frames from one API table; ``handlers`` maps an API key to its handler, others are ``not_yet``.

    ApiVersions is the table's own answer, so it has no handler."""

    def __init__(self, table: Iterable[Api] = API_TABLE, handlers: Mapping[int, Handler] | None = None,
                 auth_on: Callable[[], bool] = lambda: False, refusal: Callable[[int, Any], int | None] = lambda key, request: None) -> None:
        self.table = tuple(table)
        self.refusal = refusal  # in a set: the code a member answers (an API key, the request) it does not serve now with (set_view.py)
        self.apis = by_key(self.table)
        self.handlers = dict(handlers or {})
        self.auth_on = auth_on

    def is_flexible(self, api_key: int, api_version: int) -> bool:
        """Header v2 or v1: the request schema's flexible versions; v1 for a key outside the table."""
        entry = self.apis.get(api_key)
        return entry is not None and bool(entry.request.flexible_version_q(api_version))

    async def answer(self, payload: bytes) -> bytes | None:
        """The answer frame (size prefix included) to a request frame's payload; None when the request expects none
        (Produce with acks=0). Raises request_header.HeaderUnreadable when not even the correlation id can be read, and
        sasl.NotAuthenticated for a request other than ApiVersions and SASL's before authentication (auth on)."""
        begun = await self.begin(payload)
        return await begun if isinstance(begun, PendingAnswer) else begun

    async def begin(self, payload: bytes) -> bytes | None | PendingAnswer:
        """``answer``, except that a handler that did its work and has only a wait left (a Produce's flush) returns
        ``Later``: then the answer is a PendingAnswer the listener awaits while it reads the next request."""
        header = parse_request_header(payload, self.is_flexible)
        if must_authenticate_first(header.api_key, self.auth_on()):
            raise NotAuthenticated(f"API {header.api_key} before SASL authentication")
        entry = self.apis.get(header.api_key)
        if entry is None:
            log.debug("Kafka API key %d is not in the table (client %r)", header.api_key, header.client_id)
            return bare_error(header, UnsupportedVersion.kafka_error.errno)
        if entry.key == ApiKey.ApiVersions:
            return self.answer_api_versions(entry, header)
        if not entry.knows(header.api_version):
            log.debug("Kafka %s v%d: no schema for it", entry.key.name, header.api_version)
            return bare_error(header, UnsupportedVersion.kafka_error.errno)
        request = None
        try:
            if not entry.serves(header.api_version):
                with contextlib.suppress(InvalidRequest):  # read only to name its topics in the refusal
                    request = decode_request(entry, payload, header)
                raise UnsupportedVersion(f"{entry.key.name} v{header.api_version} is outside {entry.min_version}-{entry.max_version}")
            request = decode_request(entry, payload, header)
            if (code := self.refusal(header.api_key, request)) is not None:
                raise ServedElsewhere(code, f"{entry.key.name} is served by the set's leader")
            response = await self.handlers.get(header.api_key, not_yet)(request, header)
        except Exception as exc:  # noqa: BLE001 - refusal_of answers every failure (a handler's bug logged)
            response = refusal_of(exc, entry, request, header)
        if isinstance(response, Later):
            return PendingAnswer(self._finish(entry, request, header, response))
        return encoded(entry, request, header, response)

    async def _finish(self, entry: Api, request: Any, header: RequestHeader, later: Later) -> bytes | None:
        try:
            response = await later.rest
        except Exception as exc:  # noqa: BLE001 - as in begin
            response = refusal_of(exc, entry, request, header)
        return encoded(entry, request, header, response)

    def answer_api_versions(self, entry: Api, header: RequestHeader) -> bytes:
        """The table, at the client's version; at a version the front does not serve, v0 with UNSUPPORTED_VERSION so
        the client retries with the highest version listed (KIP-511). The body is not read: v0-4's only fields are
        the client's software name and version."""
        if not entry.serves(header.api_version):
            return encode_response(api_versions_response(self.table, UnsupportedVersion.kafka_error.errno), header, version=0)
        return encode_response(api_versions_response(self.table), header)


@dataclass(frozen=True, slots=True)
class Later:
    """What a handler returns when its work is done and only a wait is left before its response (``rest``): a
    Produce's records are written, their flush is awaited while the connection reads on (as the clients pipeline)."""

    rest: Awaitable[Any]


@dataclass(frozen=True, slots=True)
class PendingAnswer:
    """An answer frame still being waited for (a handler's ``Later``); the listener writes it in its turn."""

    answer: Coroutine[Any, Any, bytes | None]

    def __await__(self) -> Generator[Any, None, bytes | None]:
        return self.answer.__await__()


def refusal_of(exc: Exception, entry: Api, request: Any, header: RequestHeader) -> Any:
    """A KafkaRefusal's answer in the API's shape; any other failure is a handler's bug: logged, UNKNOWN_SERVER_ERROR,
    as Kafka's broker answers, not a closed connection."""
    if isinstance(exc, KafkaRefusal):
        log.debug("Kafka %s v%d refused: %s", entry.key.name, header.api_version, exc)
        return entry.error_answer(request, exc.error_code, header.api_version)
    log.error("Kafka %s v%d failed", entry.key.name, header.api_version, exc_info=exc)
    return entry.error_answer(request, UNKNOWN_SERVER_ERROR, header.api_version)


def encoded(entry: Api, request: Any, header: RequestHeader, response: Any) -> bytes | None:
    """The response's frame; None when the request expects none (Produce with acks=0)."""
    if request is not None and not request.expect_response():
        return None
    try:
        return encode_response(response, header)
    except Exception:  # an answer its schema refuses (a handler's bug): UNKNOWN_SERVER_ERROR, the connection kept
        log.exception("Kafka %s v%d: the answer does not encode", entry.key.name, header.api_version)
        return encode_response(entry.error_answer(request, UNKNOWN_SERVER_ERROR, header.api_version), header)


def decode_request(entry: Api, payload: bytes, header: RequestHeader) -> Any:
    try:
        return entry.request.decode(memoryview(payload)[header.body_offset:], version=header.api_version)
    except DECODE_ERRORS as exc:
        raise InvalidRequest(f"{entry.key.name} v{header.api_version} does not decode: {exc!r}") from exc


def encode_response(response: Any, header: RequestHeader, version: int | None = None) -> bytes:
    """At the request's version (or ``version``), with response header v1 (tagged fields) for a flexible version and
    v0 otherwise (ApiVersions: always v0). The version is set before the header: kafka-python's setter would write
    it into a response header, which has no such field."""
    response.API_VERSION = header.api_version if version is None else version
    response.with_header(correlation_id=header.correlation_id)
    return bytes(response.encode(header=True, framed=True))


def bare_error(header: RequestHeader, error_code: int) -> bytes:
    """Response header v0 and an int16 error code: all that can be said to a request no schema describes."""
    body = BARE_ERROR.pack(header.correlation_id, error_code)
    return struct.pack(">i", len(body)) + body
