"""Request-body decoding: one msgspec decoder per request struct (``halfmq.wire``), its errors one problem shape.

A body that is not JSON is 400 MALFORMED_JSON (a lone surrogate too: UTF-8 can neither store nor echo it); JSON
that does not fit the struct is 400 INVALID_REQUEST naming where (``body.messages.1.delay_ms``), in msgspec's
words. What the struct's ``__post_init__`` refuses with a typed error (a message group's bytes) keeps its own code.

Decoding is lax (``strict=False``), as pydantic's validation of the same bodies was: a number or a boolean sent as a
string (``"5"``, ``"true"``) and a whole float for an integer (``5.0``) still decode, so no client that worked stops.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, TypeVar

import msgspec

from halfmq.errors import BrokerError, InvalidRequest, MalformedJson

from .front import ApiRequest
from .problems import non_json_body

S = TypeVar("S", bound=msgspec.Struct)
_STEP = re.compile(r"\.(\w+)|\[(\d+)\]")
_NAMED = re.compile(r"Object (?:missing required|contains unknown) field `(\w+)`")  # a field, not where it is


@cache
def decoder(shape: type[S]) -> msgspec.json.Decoder[S]:
    """The one decoder of ``shape``, built the first time a body of it is read."""
    return msgspec.json.Decoder(shape, strict=False)


def invalid(error: msgspec.ValidationError, where: tuple[str, ...] = ("body",)) -> BrokerError:
    """msgspec's message as a problem: its words in ``detail``, its path as ``errors[0].loc`` after ``where``.

    What a struct's ``__post_init__`` refused with the broker's own typed error (a message group's bytes, both delivery
    times: ``halfmq.wire.messages``) is that error, its code kept; msgspec carries it as the cause.
    """
    if isinstance(error.__cause__, BrokerError):
        return error.__cause__
    text = str(error)
    message, _, at = text.partition(" - at `")
    loc = [*where, *(name or index for name, index in _STEP.findall(at.rstrip("`")[1:]))]
    named = _NAMED.match(message)
    if named:
        loc.append(named.group(1))
    return InvalidRequest(f"{'.'.join(loc)}: {message}", errors=[{"loc": loc, "msg": message, "type": "invalid"}])


def _not_json(body: bytes) -> bool:
    """Whether Python's parser refuses ``body`` too (not JSON, or nested deeper than it recurses)."""
    try:
        json.loads(body)
    except (ValueError, RecursionError):
        return True
    return False


def not_fitting(body: bytes, shape: type[Any], why: str, where: tuple[str, ...] = ("body",)) -> BrokerError:
    """Why ``body``, which msgspec would not parse as JSON, is refused (the error path only: no request pays for it).

    Python's parser takes NaN and Infinity, which msgspec's does not: a number that is not one is a value that does
    not fit (INVALID_REQUEST, as it always was); a lone surrogate, or bytes no parser takes, is MALFORMED_JSON.
    """
    try:
        msgspec.convert(json.loads(body), shape, strict=False)
    except msgspec.ValidationError as exc:
        if not isinstance(exc.__cause__, BrokerError):  # a struct's own check on what it took: not JSON all the same
            return invalid(exc, where)
    except (ValueError, RecursionError, TypeError):
        pass
    return MalformedJson(f"the request body is not valid JSON: {why}")


def decode_body(body: bytes, shape: type[S], where: tuple[str, ...] = ("body",)) -> S:
    """``body`` as ``shape``; a 400 problem if it is not JSON or does not fit.

    msgspec stops at the first value that does not fit, before it has seen the whole body: a body Python's parser
    refuses as well (nested deeper than it recurses) is MALFORMED_JSON all the same.
    """
    try:
        return decoder(shape).decode(body)
    except msgspec.ValidationError as exc:
        if _not_json(body):
            raise MalformedJson("the request body is not valid JSON (malformed, or nested too deeply)") from None
        raise invalid(exc, where) from None
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:  # msgspec raises the latter for a string not UTF-8
        raise not_fitting(body, shape, str(exc), where) from None


def converted(data: Any, shape: type[S], where: tuple[str, ...]) -> S:
    """``data`` (decoded JSON: a batch's item) as ``shape``; a 400 INVALID_REQUEST located at ``where`` if it does not fit."""
    try:
        return msgspec.convert(data, shape, strict=False)
    except msgspec.ValidationError as exc:
        raise invalid(exc, where) from None


def missing_body() -> InvalidRequest:
    return InvalidRequest("body: Field required", errors=[{"loc": ["body"], "msg": "Field required", "type": "missing"}])


async def parse_body(request: ApiRequest, shape: type[S], *, empty_is_missing: bool = False) -> S:
    """The request's JSON body as ``shape`` (a ``halfmq.wire`` request struct): 415 unless sent as JSON, else 400s.

    ``empty_is_missing``: no body at all is INVALID_REQUEST (a required body missing), as the routes FastAPI served
    until issue 31 answered (topics, heartbeats, producer ids, replication); the others answer MALFORMED_JSON.
    """
    refused = non_json_body(request.content_type)
    if refused is not None:
        raise refused
    body = await request.body()
    if empty_is_missing and not body:
        raise missing_body()
    return decode_body(body, shape)
