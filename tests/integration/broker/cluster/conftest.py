from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.etcd import EtcdProcess


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdProcess]:
    """A throwaway etcd on free ports, its data in the test's temp dir."""
    process = EtcdProcess(tmp_path / "etcd", tmp_path)
    process.start(timeout=30)
    try:
        yield process
    finally:
        process.stop(grace=5)
