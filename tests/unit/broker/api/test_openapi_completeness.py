"""Every route the broker serves, hot ones included, is in /openapi.json with its schemas."""

from __future__ import annotations

from fastapi.routing import APIRoute

from halfmq.broker.api.app import HOT_ROUTES, create_app

CONSOLE = "/console"


def _served_routes() -> set[tuple[str, str]]:
    front = create_app()
    served = {(route.path, method) for route in front.routes for method in route.methods}
    served |= {(r.path, m) for r in front.app.routes if isinstance(r, APIRoute) for m in r.methods if m != "HEAD"}
    return {(p, m) for p, m in served if not p.startswith(CONSOLE)}  # HTML pages for a browser, not the API


def test_every_served_route_is_in_the_openapi_document() -> None:
    paths = create_app().openapi()["paths"]
    documented = {(path, method.upper()) for path, ops in paths.items() for method in ops}
    missing = _served_routes() - documented
    assert not missing, f"routes served but not documented: {sorted(missing)}"


def test_every_hot_route_documents_its_request_body_response_schema_and_an_example() -> None:
    paths = create_app().openapi()["paths"]
    for spec in HOT_ROUTES:
        op = paths[spec.path][spec.method.lower()]
        body = op["requestBody"]["content"]["application/json"]["schema"]
        assert body["$ref"].endswith(f"/{spec.request.__name__}")
        assert body["examples"], spec.path
        assert op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(f"/{spec.response.__name__}")
        assert "422" in op["responses"]


def test_the_hot_front_serves_exactly_the_table() -> None:
    front = create_app()
    assert [(r.path, sorted(r.methods)) for r in front.routes] == [(s.path, [s.method]) for s in HOT_ROUTES]


def test_each_hot_example_is_a_valid_request() -> None:
    for spec in HOT_ROUTES:
        spec.request.model_validate(spec.example)


def test_every_json_operation_documents_the_shape_of_its_answer() -> None:
    paths = create_app().openapi()["paths"]
    bare = [f"{method.upper()} {path}" for path, ops in paths.items() for method, op in ops.items()
            if path != "/metrics" and not any(r.get("content", {}).get("application/json", {}).get("schema")
                                              for code, r in op["responses"].items() if code.startswith("2"))]
    assert not bare, f"operations without an answer schema: {bare}"
