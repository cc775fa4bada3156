"""RFC 9457 problem responses for the services (the broker has its own; services may not import it)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from halfmq.errors import PROBLEM_JSON, problem_body

from .errors import ServiceError

log = logging.getLogger(__name__)

ProblemStatus = Mapping[type[ServiceError], int]


def problem(request: Request, status: int, code: str, detail: str, *, retriable: bool = False, **extra: Any) -> JSONResponse:
    body = problem_body(code, code.replace("_", " ").capitalize(), status, detail, retriable=retriable,
                        instance=request.url.path, **extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON)


def status_of(error: ServiceError, statuses: ProblemStatus) -> int:
    """The HTTP status the service's table gives the error's class (or its nearest base); 500 if none."""
    for cls in type(error).__mro__:
        if cls in statuses:
            return statuses[cls]
    return 500


def service_problem(request: Request, error: ServiceError, statuses: ProblemStatus) -> JSONResponse:
    """A domain error's problem (the app's handler, and a route's fast path that bypasses the handlers)."""
    status = status_of(error, statuses)
    if status == 500:
        log.error("%s has no HTTP status in the service's problem table", type(error).__name__)
    return problem(request, status, error.code, error.detail, retriable=error.retriable)


def install(app: FastAPI, statuses: ProblemStatus) -> None:
    """Answer every error as a problem; ``statuses`` is the service's one map from domain error to HTTP status."""

    @app.exception_handler(ServiceError)
    async def _service(request: Request, exc: ServiceError) -> JSONResponse:
        return service_problem(request, exc, statuses)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"loc": [str(p) for p in e.get("loc", ())], "msg": e.get("msg", ""), "type": e.get("type", "")} for e in exc.errors()]
        if any(e["type"] in ("json_invalid", "json_type") for e in errors):
            return problem(request, 400, "MALFORMED_JSON", "the request body is not a JSON document")
        summary = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors[:5])
        return problem(request, 400, "INVALID_REQUEST", summary, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(exc.status_code, "INVALID_REQUEST")
        return problem(request, exc.status_code, code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem(request, 500, "INTERNAL_ERROR", "internal error; see the service log", retriable=True)
