"""Every route the broker serves is in /openapi.json with its schemas: the document walks the table the front serves."""

from __future__ import annotations

import json
import re
from pathlib import Path

import msgspec
from fastapi.routing import APIRoute

from halfmq.broker.api.table import ROUTES
from halfmq.broker.runtime.app import create_app

CONSOLE = "/console"


def _served_routes() -> set[tuple[str, str]]:
    front = create_app()
    served = {(route.path, route.method) for route in front.router.routes}
    served |= {(r.path, m) for r in front.fastapi.routes if isinstance(r, APIRoute) for m in r.methods if m != "HEAD"}
    return {(p, m) for p, m in served if not p.startswith(CONSOLE)}  # HTML pages for a browser, not the API


def test_every_served_route_is_in_the_openapi_document() -> None:
    paths = create_app().openapi()["paths"]
    documented = {(path, method.upper()) for path, ops in paths.items() for method in ops}
    missing = _served_routes() - documented
    assert not missing, f"routes served but not documented: {sorted(missing)}"


def test_every_route_with_a_body_documents_its_request_schema_and_an_example() -> None:
    paths = create_app().openapi()["paths"]
    for route in ROUTES:
        op = paths[route.path][route.method.lower()]
        if route.request is None:
            assert "requestBody" not in op, route.path
            continue
        body = op["requestBody"]["content"]["application/json"]["schema"]
        assert body["$ref"].endswith(f"/{route.request.__name__}")
        if route.request.__struct_fields__:
            assert body["examples"], route.path
        assert "422" in op["responses"]


def test_every_answer_schema_is_the_routes_answer_shape() -> None:
    paths = create_app().openapi()["paths"]
    for route in ROUTES:
        success = paths[route.path][route.method.lower()]["responses"][str(route.status)]["content"][route.media_type]
        if route.answer is not None:
            assert success["schema"]["$ref"].endswith(f"/{route.answer.__name__}"), route.path


def test_the_front_serves_exactly_the_table_hot_routes_first() -> None:
    front = create_app()
    assert front.router.routes == ROUTES
    assert not [r for r in front.fastapi.routes if isinstance(r, APIRoute) and r.path.startswith("/v1")]


def test_each_example_is_a_valid_request() -> None:
    for route in ROUTES:
        if route.example:
            assert route.request is not None, route.path
            msgspec.json.decode(msgspec.json.encode(route.example), type=route.request)


def test_every_parameter_of_a_path_is_documented_as_a_path_parameter() -> None:
    paths = create_app().openapi()["paths"]
    for route in ROUTES:
        op = paths[route.path][route.method.lower()]
        assert [p["name"] for p in op.get("parameters", []) if p["in"] == "path"] == route.path_params


def test_every_json_operation_documents_the_shape_of_its_answer() -> None:
    paths = create_app().openapi()["paths"]
    bare = [f"{method.upper()} {path}" for path, ops in paths.items() for method, op in ops.items()
            if path != "/metrics" and not any(r.get("content", {}).get("application/json", {}).get("schema")
                                              for code, r in op["responses"].items() if code.startswith("2"))]
    assert not bare, f"operations without an answer schema: {bare}"


def test_every_reference_in_the_document_names_one_of_its_schemas() -> None:
    document = create_app().openapi()
    refs = set(re.findall(r'"\$ref": "#/components/schemas/([^"]+)"', json.dumps(document)))
    assert refs and refs <= set(document["components"]["schemas"])


def test_every_pinned_success_answer_decodes_as_its_routes_wire_struct() -> None:
    """The answer shapes are the SDK's structs: the bytes the broker sent decode as the one its route names."""
    router = create_app().router
    pins = json.loads((Path(__file__).parent / "router_pins.json").read_text())["answers"]
    checked = 0
    for method, url, status, content_type, *_, body in pins:
        found = router.resolve(method, url.split("?")[0])
        if not isinstance(found, tuple) or not 200 <= status < 300 or content_type != "application/json":
            continue
        msgspec.json.decode(body, type=found[0].answer)
        checked += 1
    assert checked >= 10
