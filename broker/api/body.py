"""Request-body parsing for the hot routes, without FastAPI's per-request dependency machinery.

The hot endpoints (send, half, end, receive, ack, nack) are raw ASGI routes (hot_path.py):
pydantic validates the raw bytes in one call, and errors map to the same problems
FastAPI's validation would produce.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from broker.errors import InvalidRequest, MalformedJson, UnsupportedMediaType

from .hot_path import HotRequest

M = TypeVar("M", bound=BaseModel)


async def parse_body(request: HotRequest, model: type[M]) -> M:
    content_type = request.content_type
    if "json" not in content_type:
        raise UnsupportedMediaType(f"send the body as application/json, not {content_type or 'no content type'}")
    body = await request.body()
    try:
        return model.model_validate_json(body)
    except ValidationError as exc:
        raise validation_problem(exc) from None


def validation_problem(exc: ValidationError) -> InvalidRequest:
    errors = exc.errors(include_url=False, include_input=False)
    bad_json = [e for e in errors if e.get("type") in ("json_invalid", "json_type")]
    if bad_json:
        return MalformedJson(f"the request body is not valid JSON: {bad_json[0].get('msg', '')}")
    details = [{"loc": ["body", *(str(p) for p in e.get("loc", ()))], "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errors]
    summary = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details[:5])
    return InvalidRequest(summary, errors=details)
