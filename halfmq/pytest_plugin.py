"""pytest fixtures for a service that uses halfmq: registered by halfmq's ``pytest11`` entry point.

Installing halfmq makes ``halfmq_broker`` available in every test suite with no
import or conftest line. This module imports only pytest, so a suite with the SDK
alone installed still starts; the fixture itself needs ``halfmq[broker]`` and
says so when it is used without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from halfmq.testing import InProcessBroker


@pytest.fixture
def halfmq_broker_settings() -> dict[str, Any]:
    """Broker settings for ``halfmq_broker`` (``BrokerSettings`` names); override this fixture to change them,
    e.g. ``{"transaction_timeout": 1, "transaction_check_interval": 0.5}`` for check-backs within seconds."""
    return {}


@pytest.fixture
def halfmq_broker(tmp_path: Path, halfmq_broker_settings: dict[str, Any]) -> Iterator[InProcessBroker]:
    """A real broker of this test's own, empty, at ``halfmq_broker.url``; stopped after the test."""
    from halfmq.testing import InProcessBroker

    with InProcessBroker(data_dir=tmp_path / "halfmq-broker", **halfmq_broker_settings) as broker:
        yield broker
