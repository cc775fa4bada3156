"""README's "Use your RocketMQ clients": the Python program, exactly as printed, against a real broker's gRPC front."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_readme_programs import readme_programs, run_program
from tests.support.processes import ROOT

from .conftest import RmqBroker

pytestmark = pytest.mark.slow


def test_the_readme_rocketmq_program_runs_as_printed(rmq_broker: RmqBroker, tmp_path: Path) -> None:
    [program] = readme_programs("## Use your RocketMQ clients", ROOT / "docs" / "rocketmq.md")
    out = run_program(program, {"HALFMQ_ROCKETMQ": rmq_broker.endpoint}, tmp_path)
    assert out.strip().splitlines() == ["order 42 created"]


def test_the_fifo_and_delay_program_runs_as_printed(rmq_broker: RmqBroker, tmp_path: Path) -> None:
    [program] = readme_programs("## FIFO and delayed messages", ROOT / "docs" / "rocketmq.md")
    lines = run_program(program, {"HALFMQ_ROCKETMQ": rmq_broker.endpoint}, tmp_path).strip().splitlines()
    credit, refund, reminder = "order 44: +10 credits", "order 44 refunded: -10 credits", "order 45: payment due"
    assert sorted(lines) == sorted([credit, refund, reminder])
    assert lines.index(credit) < lines.index(refund)  # one message group: in send order


def readme_js() -> str:
    text = (ROOT / "docs" / "rocketmq.md").read_text()
    section = text[text.index("## Use your RocketMQ clients"):]
    section = section[:section.index("\n## ", 5)]
    [program] = re.findall(r"^```js\n(.*?)^```$", section, flags=re.S | re.M)
    return program


def test_the_readme_nodejs_program_runs_as_printed(rmq_broker: RmqBroker, node_client: Path) -> None:
    program = node_client.parent / "readme_program.js"  # beside node_modules, so require() finds the client
    program.write_text(readme_js())
    try:
        done = subprocess.run(["node", str(program)], env={**os.environ, "HALFMQ_ROCKETMQ": rmq_broker.endpoint},
                              capture_output=True, text=True, timeout=90)
    finally:
        program.unlink()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().splitlines() == ["order 43 created"]
