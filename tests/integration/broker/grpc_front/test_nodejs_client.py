"""Apache's rocketmq-client-nodejs (from npm, pinned by nodejs/package-lock.json) runs the same flow against halfmq.

Node comes from Debian's `nodejs` (bin/setup installs it); `npm ci` fills nodejs/node_modules the first time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import RmqBroker

pytestmark = pytest.mark.slow

NODE_DIR = Path(__file__).parent / "nodejs"


@pytest.fixture(scope="module")
def node_client() -> Path:
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are not installed (bin/setup installs Debian's nodejs and npm)")
    if not (NODE_DIR / "node_modules" / "rocketmq-client-nodejs").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=NODE_DIR, check=True, capture_output=True, timeout=300)
    return NODE_DIR / "flow.js"


def test_the_nodejs_client_sends_transactionally_is_checked_back_and_consumes(rmq_broker: RmqBroker, node_client: Path) -> None:
    done = subprocess.run(["node", str(node_client), rmq_broker.endpoint], cwd=NODE_DIR, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["received"] == ["node-commit", "node-left-open", "node-plain"]  # the rollback never delivered
    assert result["asked"] == ["node-left-open"]  # the open transaction was checked back over telemetry
    assert result["plainId"]
