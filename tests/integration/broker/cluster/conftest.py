from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker_set import BrokerSet
from tests.support.etcd import EtcdProcess


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdProcess]:
    """A throwaway etcd on free ports, its data in the test's temp dir, with authentication on as `halfmq up` sets it."""
    process = EtcdProcess(tmp_path / "etcd", tmp_path, auth=True)
    process.start(timeout=30)
    try:
        yield process
    finally:
        process.stop(grace=5)


@pytest.fixture
def broker_set(etcd: EtcdProcess, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[BrokerSet]:
    """Three broker processes on ``etcd`` (with the test module's ``SET_ENV``, if it has one), stopped after the test."""
    brokers = BrokerSet(etcd, tmp_path, env=getattr(request.module, "SET_ENV", None)).start()
    try:
        yield brokers
    finally:
        brokers.stop()
