"""A throwaway etcd (Debian's etcd-server) on free ports in a temp dir, for the broker-set tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .processes import ManagedProcess, free_port


def etcd_binary() -> str:
    found = shutil.which("etcd")
    if found is None:
        pytest.skip("etcd is not installed (bin/setup installs Debian's etcd-server)")
    return found


class EtcdProcess(ManagedProcess):
    """One etcd member; ``stop()`` and ``start()`` again keep its data, as a restarted etcd would."""

    def __init__(self, data_dir: Path, log_dir: Path) -> None:
        self.port = free_port()
        peer = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        super().__init__("etcd", [
            etcd_binary(), "--name", "halfmq-test", "--data-dir", str(data_dir),
            "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"halfmq-test=http://127.0.0.1:{peer}", "--log-level", "warn",
        ], {"ETCD_UNSUPPORTED_ARCH": ""}, f"{self.url}/health", log_dir / f"etcd-{self.port}.log")

    def cluster_url(self, prefix: str = "halfmq") -> str:
        return f"etcd://127.0.0.1:{self.port}/{prefix}"
