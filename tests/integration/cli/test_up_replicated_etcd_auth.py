"""`halfmq up --replicas 3` runs its etcd with authentication on (issue 30, item 2): a local process without
credentials cannot name the set's leader; the nodes log in with the generated password; a restart reuses it."""

from __future__ import annotations

import base64
import json
import signal
import stat

import httpx
import pytest

from tests.support.etcd import etcd_binary
from tests.support.processes import ManagedProcess, free_port, free_port_run, halfmq_command
from tests.support.waiting import wait_for

pytestmark = pytest.mark.slow


class UpSet(ManagedProcess):
    def __init__(self, data_dir, broker_port: int, etcd_port: int) -> None:
        self.data_dir = data_dir
        self.brokers = [f"http://127.0.0.1:{broker_port + i}" for i in range(3)]
        self.etcd = f"http://127.0.0.1:{etcd_port}"
        self.order, self.credit = f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"
        super().__init__("up", halfmq_command(
            "up", "--no-restart", "--replicas", "3", "--data-dir", str(data_dir), "--broker-port", str(broker_port),
            "--etcd-port", str(etcd_port), "--order-port", self.order.rsplit(":", 1)[1], "--credit-port", self.credit.rsplit(":", 1)[1],
        ), {}, f"{self.credit}/healthz", data_dir.parent / "up.log")

    def leader(self, token: str) -> str:
        """The URL of the node that leads ("" while none does)."""
        for url in self.brokers:
            view = httpx.get(f"{url}/v1/cluster", headers={"authorization": f"Bearer {token}"}, timeout=2).json()
            if view["writable"]:
                return url
        return ""


def _put(etcd: str, key: str, value: str) -> httpx.Response:
    return httpx.post(f"{etcd}/v3/kv/put", timeout=5, json={"key": base64.b64encode(key.encode()).decode(),
                                                             "value": base64.b64encode(value.encode()).decode()})


def test_up_with_replicas_runs_etcd_with_auth_so_an_anonymous_process_cannot_name_the_leader(tmp_path) -> None:
    etcd_binary()
    up = UpSet(tmp_path / "data", free_port_run(3), free_port_run(2))
    for run in range(2):  # the second start finds etcd secured already and the same passwords
        up.start(timeout=120)
        try:
            refused = _put(up.etcd, "/halfmq/leader", json.dumps({"node_id": "evil", "url": "http://127.0.0.1:23999"}))
            assert refused.status_code != 200 and "user name is empty" in refused.text, (run, refused.text)
            auth = up.data_dir / "auth"
            for name in ("etcd-root.password", "etcd-halfmq.password"):
                assert stat.S_IMODE((auth / name).stat().st_mode) == 0o600, name
            token = (auth / "admin.token").read_text().strip()
            assert _put(up.etcd, "/halfmq/in-sync", "[]").status_code != 200
            wait_for(lambda token=token: up.leader(token), timeout=30)
            placed = httpx.post(f"{up.order}/orders", json={"user_id": "u1", "amount": "4"}, timeout=30)
            assert placed.status_code == 201, placed.text
        finally:
            up.stop(grace=60, sig=signal.SIGINT)
