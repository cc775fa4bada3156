from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support import report
from tests.support.processes import BrokerProcess
from tests.support.small_disk import small_disk  # noqa: F401 - the fixture, for every test that asks for a small disk

# Test brokers: small segments to exercise rollover, fast retries so DLQ tests do not wait minutes.
TEST_BROKER_ENV = {
    "HALFMQ_BROKER_SEGMENT_BYTES": str(256 * 1024),
    "HALFMQ_BROKER_RETRY_DELAYS": "0.2,0.4",
    "HALFMQ_BROKER_MAX_RECONSUME_TIMES": "3",
    "HALFMQ_BROKER_OFFSET_FLUSH_INTERVAL": "0.2",
    # Disk watermarks off (1: never passed): a test broker answers the same on a CI disk 90 % full; the tests of the
    # watermarks set their own (tests/integration/broker/test_disk_watermarks.py).
    "HALFMQ_BROKER_DISK_EARLY_DELETE_RATIO": "1",
    "HALFMQ_BROKER_DISK_REFUSE_SENDS_RATIO": "1",
}

BrokerFactory = Callable[..., BrokerProcess]


@pytest.fixture
def halfmq_broker_settings() -> dict[str, str]:
    """The same test settings for the in-process broker (halfmq.testing's `halfmq_broker`)."""
    return {name.removeprefix("HALFMQ_BROKER_").lower(): value for name, value in TEST_BROKER_ENV.items()}


@pytest.fixture
def start_broker(tmp_path: Path) -> Iterator[BrokerFactory]:
    """Start real `halfmq broker` processes; every one is stopped at teardown."""
    started: list[BrokerProcess] = []

    def factory(env: dict[str, str] | None = None, data_dir: Path | None = None) -> BrokerProcess:
        proc = BrokerProcess(data_dir or tmp_path / f"broker-data-{len(started)}", tmp_path, {**TEST_BROKER_ENV, **(env or {})})
        started.append(proc)
        return proc.start()

    yield factory
    for proc in started:
        proc.stop()


@pytest.fixture
def broker(start_broker: BrokerFactory) -> BrokerProcess:
    return start_broker()


@pytest.fixture
def broker_url(broker: BrokerProcess) -> str:
    return broker.url


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL cluster for the whole run (started on first use)."""
    from tests.support.postgres import PostgresCluster

    cluster = PostgresCluster().start()
    yield cluster
    cluster.stop()


def pytest_configure(config: pytest.Config) -> None:
    report.attach(config)  # fault tests' counts reach the terminal (tests/support/report.py)
