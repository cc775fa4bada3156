"""``/openapi.json`` built by walking the route table (router.py): a served route cannot be missing from it.

Each route says its body (a ``halfmq.wire`` request struct, the one that
decodes it and the one the SDK builds), its parameters (a pydantic model of
params.py, the one the front checks them with) and its answer (a
``halfmq.wire`` struct, the shape the SDK decodes); the document takes their
JSON schemas from the same classes, so no model exists for the document alone.
"""

from __future__ import annotations

from typing import Any

import msgspec
from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from halfmq.wire import SCHEMA_REF, ItemProblem

from .problems import PROBLEM
from .router import JSON, Route

ALSO_DOCUMENTED = (ItemProblem,)  # named by the batches' answers (wire.one_of), the answer of no route
_ERRORS: dict[str, dict[str, Any]] = {
    str(code): {"description": text, "content": {PROBLEM: {"schema": {"type": "object"}}}}
    for code, text in ((400, "Malformed or invalid request (problem+json)"), (401, "No valid bearer token"),
                       (403, "Outside the principal's policies"), (404, "Unknown resource"),
                       (409, "Conflicts with the resource's state"), (413, "Body too large"),
                       (415, "Body is not JSON"), (422, "Body fails validation"),
                       (429, "A broker capacity limit is reached; retry later (Retry-After)"))
}


def _same(one: dict[str, Any], other: dict[str, Any]) -> bool:
    """Two generators' schemas of one enum (TransactionState) differ only in words and order."""
    return one == other or ("enum" in one and sorted(one["enum"]) == sorted(other.get("enum", [])))


class _Schemas:
    """The components: parameters' schemas from pydantic (what checks them), bodies' and answers' from msgspec.

    One namespace: a name both sides use must be the same shape.
    """

    def __init__(self, routes: list[Route]) -> None:
        models = {r.params for r in routes if r.params is not None}
        structs = sorted({s for r in routes for s in (r.request, r.answer) if s is not None} | set(ALSO_DOCUMENTED), key=str)
        refs, defs = models_json_schema([(m, "validation") for m in sorted(models, key=str)],
                                        ref_template=SCHEMA_REF.replace("{name}", "{model}"))
        self.components: dict[str, Any] = dict(defs.get("$defs", {}))
        self.refs: dict[Any, dict[str, Any]] = {m: ref for (m, _), ref in refs.items()}
        struct_refs, struct_defs = msgspec.json.schema_components(structs, ref_template=SCHEMA_REF)
        for name, schema in struct_defs.items():
            if not _same(self.components.setdefault(name, schema), schema):
                raise ValueError(f"two shapes are called {name}: rename one")
        self.refs.update(zip(structs, struct_refs, strict=True))
        # A parameters model's fields become parameters; its own schema is no component (nothing refers to it).
        self.params = {m: self.components.pop(self.refs[m]["$ref"].rsplit("/", 1)[1])
                       for m in {r.params for r in routes if r.params is not None}}

    def properties(self, model: type[BaseModel]) -> tuple[dict[str, Any], set[str]]:
        return self.params[model].get("properties", {}), set(self.params[model].get("required", []))


def _parameters(route: Route, schemas: _Schemas) -> list[dict[str, Any]]:
    props, required = schemas.properties(route.params) if route.params is not None else ({}, set())
    found = [{"name": name, "in": "path", "required": True, "schema": props.get(name, {"type": "string", "title": name.title()})}
             for name in route.path_params]
    found += [{"name": name, "in": "query", "required": name in required, "schema": schema}
              for name, schema in props.items() if name not in route.path_params]
    return found


def _operation(route: Route, schemas: _Schemas) -> dict[str, Any]:
    op: dict[str, Any] = {"tags": [route.tag], "summary": route.summary, "operationId": route.endpoint.__name__}
    parameters = _parameters(route, schemas)
    if parameters:
        op["parameters"] = parameters
    if route.request is not None:
        body = dict(schemas.refs[route.request])
        if route.example:
            body["examples"] = [route.example]
        op["requestBody"] = {"required": True, "content": {JSON: {"schema": body}}}
    answer = schemas.refs[route.answer] if route.answer is not None else {"type": "string"}
    success = {"description": "Successful Response", "content": {route.media_type: {"schema": answer}}}
    op["responses"] = {str(route.status): success, **({} if route.public else _ERRORS)}
    return op


def document(routes: list[Route], title: str, version: str) -> dict[str, Any]:
    """The OpenAPI 3.1 document of ``routes``: paths in table order, one operation per route."""
    schemas = _Schemas(routes)
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, schemas)
    ids = [op["operationId"] for ops in paths.values() for op in ops.values()]
    if len(ids) != len(set(ids)):
        raise ValueError("two endpoints share a name: the document's operation ids must be unique")
    return {"openapi": "3.1.0", "info": {"title": title, "version": version}, "paths": paths,
            "components": {"schemas": dict(sorted(schemas.components.items()))}}
