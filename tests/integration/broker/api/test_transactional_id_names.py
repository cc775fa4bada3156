"""A transactional id is named by the rule every name follows (broker/messages/names.py): a crafted one is refused and stores nothing."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.broker.http_helpers import path
from tests.support.crafted_names import CRAFTED

from .support import ModuleBrokerFactory, assert_problem, stores_nothing

ADDRESSABLE = {label: name for label, name in CRAFTED.items() if name not in ("", "..")}  # those two name no route at all


@pytest.fixture(scope="module")
def client(module_broker_factory: ModuleBrokerFactory) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=module_broker_factory().url, timeout=15) as c:
        yield c


def transactional_ids(client: httpx.Client) -> list[str]:
    resp = client.get("/v1/transactional-ids")
    resp.raise_for_status()
    return [t["transactional_id"] for t in resp.json()["transactional_ids"]]


@pytest.mark.parametrize("name", list(ADDRESSABLE.values()), ids=list(ADDRESSABLE))
def test_init_with_a_crafted_transactional_id_is_refused_with_400_and_stores_nothing(client: httpx.Client, name: str) -> None:
    with stores_nothing(client):
        body = assert_problem(client.post(path("v1", "transactional-ids", name, "init"), json={}), 400, "INVALID_TRANSACTIONAL_ID")
    assert "A-Z a-z 0-9 _ -" in body["detail"]
    assert name not in transactional_ids(client)


def test_a_plain_transactional_id_still_initialises(client: httpx.Client) -> None:
    answer = client.post(path("v1", "transactional-ids", "order-copier_1", "init"), json={})
    assert answer.status_code == 200, answer.text
    assert "order-copier_1" in transactional_ids(client)
