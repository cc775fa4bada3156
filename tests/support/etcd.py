"""A throwaway etcd (Debian's etcd-server) on free ports in a temp dir, for the broker-set tests.

With ``auth=True`` (the set tests' fixture) it is secured as ``halfmq up`` secures its etcd
(broker/cluster/etcd_auth.py) every time it becomes healthy: a root user, and a ``halfmq`` user
whose role may read and write ``/PREFIX/`` only. ``broker_env()`` gives the nodes that user.
"""

from __future__ import annotations

import asyncio
import secrets
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from halfmq.broker.cluster.etcd import EtcdCredentials
from halfmq.broker.cluster.etcd_auth import ROOT, EtcdAuthPlan, secure

from .processes import ManagedProcess, free_port


def etcd_binary() -> str:
    found = shutil.which("etcd")
    if found is None:
        pytest.skip("etcd is not installed (bin/setup installs Debian's etcd-server)")
    return found


class EtcdProcess(ManagedProcess):
    """One etcd member; ``stop()`` and ``start()`` again keep its data, as a restarted etcd would."""

    def __init__(self, data_dir: Path, log_dir: Path, auth: bool = False, prefix: str = "set", host: str = "127.0.0.1") -> None:
        """``host``: the address it listens on (the queue checker's network namespace gives etcd 127.0.0.10)."""
        self.port = free_port()
        peer = free_port()
        self.host = host
        self.url = f"http://{host}:{self.port}"
        self.auth = auth
        self.prefix = prefix
        self.root = EtcdCredentials(ROOT, secrets.token_urlsafe(16)) if auth else None
        self.credentials = EtcdCredentials("halfmq", secrets.token_urlsafe(16)) if auth else None
        self.password_file = log_dir / f"etcd-{self.port}-halfmq.password"
        super().__init__("etcd", [
            etcd_binary(), "--name", "halfmq-test", "--data-dir", str(data_dir),
            "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
            "--listen-peer-urls", f"http://{host}:{peer}", "--initial-advertise-peer-urls", f"http://{host}:{peer}",
            "--initial-cluster", f"halfmq-test=http://{host}:{peer}", "--log-level", "warn",
        ], {"ETCD_UNSUPPORTED_ARCH": ""}, f"{self.url}/health", log_dir / f"etcd-{self.port}.log")

    def wait_healthy(self, timeout: float, poll: float = 0.05, interrupted: threading.Event | None = None) -> bool:
        healthy = super().wait_healthy(timeout, poll, interrupted)
        if healthy and self.root is not None and self.credentials is not None:
            plan = EtcdAuthPlan(self.root.password, self.credentials, f"/{self.prefix}/")
            with ThreadPoolExecutor(1) as pool:  # its own loop: a test may (re)start etcd from inside a running one
                pool.submit(asyncio.run, secure(self.url, plan)).result()
            self.password_file.write_text(self.credentials.password + "\n")
            self.password_file.chmod(0o600)
        return healthy

    def broker_env(self) -> dict[str, str]:
        """The settings a node of a set on this etcd needs to log in (none without auth)."""
        if self.credentials is None:
            return {}
        return {"HALFMQ_BROKER_ETCD_USER": self.credentials.user, "HALFMQ_BROKER_ETCD_PASSWORD_FILE": str(self.password_file)}

    def cluster_url(self, prefix: str | None = None) -> str:
        return f"etcd://{self.host}:{self.port}/{prefix or self.prefix}"
