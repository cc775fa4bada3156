"""The route table's one loop: each route is found by its own path, a wrong method is a 405, anything else is not ours."""

from __future__ import annotations

from halfmq.broker.api.router import Route, Router
from halfmq.broker.api.table import ROUTES


async def _endpoint(request):  # pragma: no cover - never called here
    raise AssertionError


def _example_path(route: Route) -> str:
    return "/".join("p" if is_param else text for text, is_param in route.segments)


def test_every_route_is_found_by_its_own_path_and_method() -> None:
    router = Router(ROUTES)
    for route in ROUTES:
        found = router.resolve(route.method, _example_path(route))
        assert isinstance(found, tuple) and found[0] is route, route.path
        assert found[1] == dict.fromkeys(route.path_params, "p")


def test_a_wrong_method_answers_every_method_the_path_takes() -> None:
    router = Router(ROUTES)
    assert router.resolve("DELETE", "/v1/topics") == frozenset({"GET", "POST"})
    assert router.resolve("DELETE", "/v1/transactions") == frozenset({"GET", "POST"})
    assert router.resolve("GET", "/v1/topics/T/messages") == frozenset({"POST"})


def test_an_unknown_path_an_empty_parameter_or_a_trailing_slash_is_not_in_the_table() -> None:
    router = Router(ROUTES)
    for path in ("/v1/nope", "/v1/topics//queues/0/messages", "/v1/topics/", "/", "/v1", "/console", "/v1/topics/T/nope"):
        assert router.resolve("GET", path) is None, path
    assert router.serves_path("/v1/topics") and not router.serves_path("/v1/topics/")


def test_a_parameter_in_the_third_segment_is_matched_beside_literal_ones() -> None:
    routes = [Route("GET", "/v1/{kind}/x", _endpoint, "", ""), Route("POST", "/v1/topics/x", _endpoint, "", "")]
    router = Router(routes)
    assert router.resolve("GET", "/v1/topics/x")[0] is routes[0]  # type: ignore[index]
    assert router.resolve("POST", "/v1/topics/x")[0] is routes[1]  # type: ignore[index]
    assert router.resolve("GET", "/v1/groups/x")[0] is routes[0]  # type: ignore[index]
    assert router.resolve("PUT", "/v1/topics/x") == frozenset({"GET", "POST"})


def test_a_route_twice_in_the_table_is_refused() -> None:
    try:
        Router([*ROUTES, ROUTES[0]])
    except ValueError as exc:
        assert ROUTES[0].path in str(exc)
    else:
        raise AssertionError("the duplicate was accepted")
