"""The one place errors become RFC 9457 problem+json responses."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from halfmq.broker.usecases.errors import STORE_ERRORS, as_broker_error
from halfmq.errors import (
    PROBLEM_JSON,
    BrokerError,
    InvalidRequest,
    MalformedJson,
    MethodNotAllowed,
    RouteNotFound,
    StoreUnavailable,
    Unauthenticated,
    UnsupportedMediaType,
)

from .allowed_methods import allow_header, allowed_methods
from .responses import JsonResponse

if TYPE_CHECKING:  # FastAPI is the fallback app's, built at its first request (broker/runtime/fallback_app.py): the hot routes
    # answer problems without it
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError

log = logging.getLogger(__name__)
PROBLEM = PROBLEM_JSON  # the one spelling, halfmq.errors
__all__ = ["PROBLEM", "STORE_ERRORS", "as_broker_error"]  # as_broker_error: the use cases' mapping, None for a bug


CHALLENGE = {"www-authenticate": 'Bearer realm="halfmq"'}  # RFC 9110: every 401 names its scheme


def problem_headers(error: BrokerError) -> dict[str, str]:
    """Headers a problem carries besides its body: when to retry, how to authenticate."""
    if isinstance(error, Unauthenticated):
        return CHALLENGE
    return {"retry-after": str(error.retry_after)} if error.retry_after else {}


def log_server_error(method: str, path: str, error: BrokerError) -> None:
    """A line per 5xx answer, except a refusing store: it logs when it starts and stops refusing."""
    if error.status >= 500 and not isinstance(error, StoreUnavailable):
        log.warning("%s %s: %s", method, path, error.detail)


def problem_response(error: BrokerError, request: Request) -> JsonResponse:
    return JsonResponse(error.to_problem(request.url.path), status_code=error.status, media_type=PROBLEM,
                        headers=problem_headers(error) or None)


def non_json_body(content_type: str) -> UnsupportedMediaType | None:
    """415 for a body sent as anything but JSON; None when it is JSON."""
    if "json" in content_type:
        return None
    return UnsupportedMediaType(f"send the body as application/json, not {content_type or 'no content type'}")


def validation_problem(errors: Sequence[Mapping[str, Any]], *, where: tuple[str, ...] = ()) -> BrokerError:
    """pydantic's errors as one problem, for the hot routes and FastAPI's alike.

    ``where`` prefixes each location: the hot routes validate the body alone,
    FastAPI's errors already say body, query or path.
    """
    bad_json = [e for e in errors if e.get("type") in ("json_invalid", "json_type")]
    if bad_json:
        return MalformedJson(f"the request body is not valid JSON: {bad_json[0].get('msg', '')}")
    details = [{"loc": [*where, *(str(p) for p in e.get("loc", ()))], "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errors]
    summary = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details[:5])
    return InvalidRequest(summary, errors=details)


def _validation_error(exc: RequestValidationError, request: Request) -> BrokerError:
    errors = exc.errors()
    refused = non_json_body(request.headers.get("content-type", ""))
    if refused is not None and any(e.get("loc", ())[:1] == ("body",) for e in errors):
        return refused
    return validation_problem(errors)


def install(app: FastAPI) -> None:
    from fastapi.exceptions import RequestValidationError
    from starlette.exceptions import HTTPException as StarletteHTTPException

    @app.exception_handler(BrokerError)
    async def _broker_error(request: Request, exc: BrokerError) -> JsonResponse:
        log_server_error(request.method, request.url.path, exc)
        return problem_response(exc, request)

    async def _store_error(request: Request, exc: Exception) -> JsonResponse:
        error = as_broker_error(exc) or StoreUnavailable(str(exc))
        log_server_error(request.method, request.url.path, error)
        return problem_response(error, request)

    for store_error in STORE_ERRORS:
        app.add_exception_handler(store_error, _store_error)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JsonResponse:
        return problem_response(_validation_error(exc, request), request)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JsonResponse:
        if exc.status_code == 404:
            return problem_response(RouteNotFound(f"no resource at {request.url.path}"), request)
        if exc.status_code == 405:
            response = problem_response(MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}"), request)
            response.headers["allow"] = allow_header(allowed_methods(request.app.router.routes, request.scope))
            return response
        if exc.status_code == 400 and isinstance(exc.__cause__, (ValueError, RecursionError)):
            # FastAPI's "error parsing the body": not UTF-8 (UnicodeDecodeError) or nested too deeply to parse.
            return problem_response(MalformedJson("the request body is not a JSON document (invalid UTF-8 or nested too deeply)"), request)
        error = InvalidRequest(str(exc.detail))
        body = error.to_problem(request.url.path) | {"status": exc.status_code}
        return JsonResponse(body, status_code=exc.status_code, media_type=PROBLEM)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JsonResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem_response(BrokerError("internal error; see the broker log"), request)
