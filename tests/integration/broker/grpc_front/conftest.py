"""A real broker process with its RocketMQ 5 front on a free port, and Apache's Python client pointed at it."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.machine_lock import machine_lock
from tests.support.processes import BrokerProcess, free_port

rocketmq = pytest.importorskip("rocketmq", reason="the rocketmq extra (Apache's rocketmq-python-client)")

NODE_DIR = Path(__file__).parent / "nodejs"  # rocketmq-client-nodejs, pinned by its package-lock.json

FAST_CHECKS = {
    "HALFMQ_BROKER_TRANSACTION_TIMEOUT": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_INTERVAL": "0.5",
    "HALFMQ_BROKER_TRANSACTION_CHECK_MAX": "5",
}


@dataclass
class RmqBroker:
    process: BrokerProcess
    grpc_port: int

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def url(self) -> str:
        return self.process.url

    def config(self):
        return rocketmq.ClientConfiguration(self.endpoint, rocketmq.Credentials())


@pytest.fixture
def start_rmq_broker(start_broker) -> Callable[..., RmqBroker]:
    def start(env: dict[str, str] | None = None) -> RmqBroker:
        port = free_port()
        proc = start_broker({**FAST_CHECKS, "HALFMQ_BROKER_GRPC_PORT": str(port), **(env or {})})
        return RmqBroker(proc, port)
    return start


@pytest.fixture
def rmq_broker(start_rmq_broker) -> RmqBroker:
    return start_rmq_broker()




def message(topic: str, body: bytes, tag: str | None = None, keys: str | None = None):
    msg = rocketmq.Message()
    msg.topic = topic
    msg.body = body
    if tag:
        msg.tag = tag
    if keys:
        msg.keys = keys
    return msg


@pytest.fixture(scope="module")
def node_client() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed (bin/setup installs Debian's nodejs and npm)")
    # the suite's other process may be installing it too; npm ci empties node_modules first, so one installs at a time
    with machine_lock(Path(tempfile.gettempdir()) / "halfmq-nodejs-client.lock"):
        if not (NODE_DIR / "node_modules" / "rocketmq-client-nodejs").is_dir():
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, capture_output=True,
                           timeout=300)
    return NODE_DIR / "flow.js"
