"""Assertions shared by the HTTP API tests: RFC 9457 problems and "the request changed nothing"."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx

from tests.support.processes import BrokerProcess

PROBLEM = "application/problem+json"
ModuleBrokerFactory = Callable[..., BrokerProcess]


def assert_problem(resp: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """``resp`` is an RFC 9457 problem with ``status`` and the stable ``code``; returns its body."""
    assert resp.status_code == status, f"expected {status} {code}, got {resp.status_code}: {resp.text[:500]}"
    assert resp.headers["content-type"].split(";")[0].strip() == PROBLEM, resp.headers["content-type"]
    body = resp.json()
    for field in ("type", "title", "status", "detail", "code"):
        assert field in body, f"problem body lacks {field!r}: {body}"
    assert body["status"] == status
    assert body["code"] == code
    assert isinstance(body["type"], str) and body["type"].startswith("https://")
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    assert body["retriable"] is False  # bad input: repeating the request cannot help
    return body


def store_state(client: httpx.Client) -> tuple[Any, int]:
    """Every topic with its queues' min/max offsets, and the commit-log end: what a write would change."""
    topics = client.get("/v1/topics")
    topics.raise_for_status()
    health = client.get("/healthz")
    health.raise_for_status()
    return topics.json(), health.json()["commit_log_end_offset"]


@contextmanager
def stores_nothing(client: httpx.Client) -> Iterator[None]:
    """The block must leave topics, queue offsets and the commit log exactly as they were."""
    before = store_state(client)
    yield
    assert store_state(client) == before, "a refused request changed the store"


def topic_names(client: httpx.Client) -> set[str]:
    resp = client.get("/v1/topics")
    resp.raise_for_status()
    return {t["name"] for t in resp.json()["topics"]}
