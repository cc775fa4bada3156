"""Fixtures shared by the broker's process-level tests: a real broker with auth on, and a client per principal."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.support.auth import bearer, write_auth_file
from tests.support.check_server import CheckServer
from tests.support.processes import BrokerProcess


@pytest.fixture
def checks() -> Iterator[CheckServer]:
    """A producer's check endpoint, answering check-backs as scripted (tests/support/check_server.py)."""
    server = CheckServer()
    yield server
    server.close()


@pytest.fixture
def secured(start_broker, tmp_path) -> tuple[BrokerProcess, dict[str, str]]:
    _, tokens = write_auth_file(tmp_path / "auth.json")
    return start_broker({"HALFMQ_BROKER_AUTH_FILE": str(tmp_path / "auth.json")}), tokens


@pytest.fixture
def as_(secured):
    broker, tokens = secured
    clients: list[httpx.Client] = []

    def client(name: str | None) -> httpx.Client:
        c = httpx.Client(base_url=broker.url, timeout=15, headers=bearer(tokens[name]) if name else {})
        clients.append(c)
        return c

    yield client
    for c in clients:
        c.close()


@pytest.fixture
def started() -> Iterator[Callable]:
    """Start a RocketMQ client (Apache's); every one is shut down at teardown, quietly: one of a killed node may fail to."""
    clients: list = []

    def start(client):
        client.startup()
        clients.append(client)
        return client

    yield start
    for client in reversed(clients):
        with contextlib.suppress(Exception):
            client.shutdown()


@pytest.fixture
def browser(tmp_path) -> Iterator[Any]:
    """A headless Chromium (skipped without one, except in CI), quit at teardown."""
    from tests.integration.broker.console.chromium import start_chromium

    driver = start_chromium(tmp_path / "chromium-profile")
    yield driver
    driver.quit()
