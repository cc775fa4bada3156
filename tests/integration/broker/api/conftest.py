"""Module-scoped real brokers for the HTTP API tests: one process per module and env, not per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import TEST_BROKER_ENV
from tests.support.processes import BrokerProcess

from .support import ModuleBrokerFactory


@pytest.fixture(scope="module")
def module_broker_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleBrokerFactory]:
    """Start real `halfmq broker` processes (TEST_BROKER_ENV + ``env``) that live until the module ends."""
    started: list[BrokerProcess] = []

    def factory(env: dict[str, str] | None = None) -> BrokerProcess:
        base = tmp_path_factory.mktemp("api-broker")
        proc = BrokerProcess(base / "data", base, {**TEST_BROKER_ENV, **(env or {})})
        started.append(proc)
        return proc.start()

    yield factory
    for proc in started:
        proc.stop()
