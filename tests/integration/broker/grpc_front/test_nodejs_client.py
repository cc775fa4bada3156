"""Apache's rocketmq-client-nodejs (from npm, pinned by nodejs/package-lock.json) runs the same flow against halfmq.

Node comes from Debian's `nodejs` (bin/setup installs it); `npm ci` fills nodejs/node_modules the first time.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from .conftest import NODE_DIR, RmqBroker

pytestmark = pytest.mark.slow

def test_the_nodejs_client_sends_transactionally_is_checked_back_and_consumes(rmq_broker: RmqBroker, node_client: Path) -> None:
    done = subprocess.run(["node", str(node_client), rmq_broker.endpoint], cwd=NODE_DIR, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["received"] == ["node-commit", "node-left-open", "node-plain"]  # the rollback never delivered
    assert result["asked"] == ["node-left-open"]  # the open transaction was checked back over telemetry
    assert result["plainId"]
