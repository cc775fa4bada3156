"""README's "Use halfmq from your service": each program, exactly as printed, run against a real broker process.

The programs are cut out of README.md (no copy kept here), so a README edit that
breaks one breaks this test. They get the broker's address from $HALFMQ_URL, as
the README says, and run with the repository out of their way (cwd: a temp dir).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.conftest import BrokerFactory
from tests.support.processes import ROOT, free_port

pytestmark = pytest.mark.slow

SECTION = "## Use halfmq from your service"


def readme_programs(heading: str = SECTION, path: Path = ROOT / "README.md") -> list[str]:
    text = path.read_text()
    section = text[text.index(heading):]
    section = section[:section.index("\n## ", len(heading))]
    if "\n### " in section:  # the subsections' programs live in examples/ and have tests of their own
        section = section[:section.index("\n### ")]
    return re.findall(r"^```python\n(.*?)^```$", section, flags=re.S | re.M)


def run_program(source: str, env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run([sys.executable, "-c", source], env={**os.environ, **env}, cwd=cwd,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_readme_shows_four_programs_in_the_order_this_test_runs_them() -> None:
    programs = readme_programs()
    assert len(programs) == 4, programs
    assert ["Producer(" in programs[0], "AsyncProducer(" in programs[1], "Consumer(" in programs[2],
            "TransactionProducer(" in programs[3]] == [True] * 4


def test_each_readme_program_runs_as_printed_against_a_broker(start_broker: BrokerFactory, tmp_path: Path) -> None:
    blocking_send, async_send, consume, transactional = readme_programs()
    env = {"HALFMQ_URL": start_broker().url}

    status, msg_id = run_program(blocking_send, env, tmp_path).split()
    assert status == "SEND_OK" and msg_id

    assert run_program(async_send, env, tmp_path).strip() == "10 sent: ['SEND_OK']"

    order_id, local_state, end_state = run_program(transactional, {**env, "PORT": str(free_port())}, tmp_path).split()
    assert (local_state, end_state) == ("commit", "committed")
    assert (tmp_path / "orders.db").is_file()

    expected = {"o-1", *(f"o-{i}" for i in range(2, 12)), order_id}
    consumer = subprocess.Popen([sys.executable, "-c", consume], env={**os.environ, **env}, cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    try:
        received: set[str] = set()
        deadline = time.monotonic() + 30
        assert consumer.stderr is not None
        while received != expected and time.monotonic() < deadline:
            line = consumer.stderr.readline()
            if not line:
                break
            lines.append(line)
            if " received " in line:
                received.add(line.split()[-1])
        assert received == expected, "".join(lines)
    finally:
        consumer.send_signal(signal.SIGTERM)
        out, err = consumer.communicate(timeout=30)
    assert consumer.returncode == 0, out + err
    assert not [line for line in lines + err.splitlines() if " received " in line and line.split()[-1] not in expected]


WHICH = "## Which transaction do I need?"


def test_both_kinds_of_transaction_in_the_readme_run_as_printed(start_broker: BrokerFactory, tmp_path: Path) -> None:
    half, producer_transaction = readme_programs(WHICH)
    assert "TransactionProducer(" in half and "TransactionalProducer(" in producer_transaction
    broker = start_broker()
    env = {"HALFMQ_URL": broker.url}
    assert run_program(half, env, tmp_path).split() == ["commit", "committed"]
    assert (tmp_path / "shop.db").is_file()
    state, copied, _ = run_program(producer_transaction, env, tmp_path).split()
    assert (state, copied) == ("COMPLETE_COMMIT", "1")  # the half message above, now committed on ORDERS
    audit = httpx.get(f"{broker.url}/v1/topics/AUDIT").json()
    assert sum(q["max_offset"] for q in audit["queues"]) == 1
