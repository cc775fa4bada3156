"""The one place errors become RFC 9457 problem+json responses."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from .responses import JsonResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from broker.errors import BrokerError, InvalidRequest, MalformedJson, MethodNotAllowed, RouteNotFound, Unauthenticated, UnsupportedMediaType

log = logging.getLogger(__name__)
PROBLEM = "application/problem+json"
CHALLENGE = {"www-authenticate": 'Bearer realm="halfmq"'}  # RFC 9110: every 401 names its scheme


def problem_response(error: BrokerError, request: Request) -> JsonResponse:
    headers = CHALLENGE if isinstance(error, Unauthenticated) else None
    return JsonResponse(error.to_problem(request.url.path), status_code=error.status, media_type=PROBLEM, headers=headers)


def _validation_error(exc: RequestValidationError, request: Request) -> BrokerError:
    errors = exc.errors()
    content_type = request.headers.get("content-type", "")
    if "json" not in content_type and any(e.get("loc", ())[:1] == ("body",) for e in errors):
        return UnsupportedMediaType(f"send the body as application/json, not {content_type or 'no content type'}")
    if any(e.get("type") in ("json_invalid", "json_type") for e in errors):
        return MalformedJson("the request body is not a JSON document")
    details = [{"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errors]
    summary = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details[:5])
    return InvalidRequest(summary, errors=details)


def install(app: FastAPI) -> None:
    @app.exception_handler(BrokerError)
    async def _broker_error(request: Request, exc: BrokerError) -> JsonResponse:
        if exc.status >= 500:
            log.warning("%s %s: %s", request.method, request.url.path, exc.detail)
        return problem_response(exc, request)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JsonResponse:
        return problem_response(_validation_error(exc, request), request)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JsonResponse:
        if exc.status_code == 404:
            return problem_response(RouteNotFound(f"no resource at {request.url.path}"), request)
        if exc.status_code == 405:
            return problem_response(MethodNotAllowed(f"{request.method} is not allowed on {request.url.path}"), request)
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
