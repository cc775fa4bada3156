"""`halfmq up`'s etcd: a supervised component that, each time it becomes healthy, has authentication on before any node starts."""

from __future__ import annotations

import threading

from halfmq.broker.cluster.etcd import EtcdUnavailable

from ..credentials import Credentials
from ..etcd_auth import secure_etcd
from .supervisor import Component


class SecuredEtcd(Component):
    def __init__(self, argv: list[str], endpoint: str, creds: Credentials) -> None:
        super().__init__("etcd", argv, {}, f"{endpoint}/health", "white")
        self.endpoint = endpoint
        self.creds = creds

    def wait_healthy(self, timeout: float, poll: float = 0.05, interrupted: threading.Event | None = None) -> bool:
        healthy = super().wait_healthy(timeout, poll, interrupted)
        if healthy:
            try:
                turned_on = secure_etcd(self.endpoint, self.creds)
            except EtcdUnavailable as exc:
                raise RuntimeError(f"etcd: {exc}") from None
            if turned_on and self.on_line is not None:
                self.on_line(f"authentication on: users root and halfmq (passwords in {self.creds.directory})")
        return healthy
