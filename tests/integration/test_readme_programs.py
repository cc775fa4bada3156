"""README's "Use halfmq from your service": each program, exactly as printed, run against a real broker process.

The programs are cut out of README.md (no copy kept here), so a README edit that
breaks one breaks this test. They get the broker's address from $HALFMQ_URL, as
the README says, and run with the repository out of their way (cwd: a temp dir).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
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
    assert "TransactionProducer(" in half and "transactional_id=" in producer_transaction
    broker = start_broker()
    env = {"HALFMQ_URL": broker.url}
    assert run_program(half, env, tmp_path).split() == ["commit", "committed"]
    assert (tmp_path / "shop.db").is_file()
    state, copied, _ = run_program(producer_transaction, env, tmp_path).split()
    assert (state, copied) == ("COMPLETE_COMMIT", "1")  # the half message above, now committed on ORDERS
    audit = httpx.get(f"{broker.url}/v1/topics/AUDIT").json()
    assert sum(q["max_offset"] for q in audit["queues"]) == 1


def test_the_transactional_readme_program_says_in_one_line_that_its_check_port_is_busy(tmp_path: Path) -> None:
    transactional = readme_programs()[3]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        try:
            done = subprocess.run([sys.executable, "-c", transactional], cwd=tmp_path, capture_output=True, text=True, timeout=30,
                                  env={**os.environ, "HALFMQ_URL": f"http://127.0.0.1:{free_port()}", "PORT": str(port)})
        except subprocess.TimeoutExpired as hung:
            raise AssertionError(f"the program hung with its port {port} taken: {hung.stderr!r}") from None
    assert done.returncode != 0
    assert len(done.stderr.strip().splitlines()) == 1 and str(port) in done.stderr and "in use" in done.stderr, done.stderr


def inbox_program() -> str:
    from tests.integration.test_inbox_example import readme_program

    return readme_program()


def test_the_readme_programs_run_one_after_another_on_one_broker(start_broker: BrokerFactory, tmp_path: Path) -> None:
    """Every program of README.md and the inbox of docs/sdk.md, in one directory against one broker, as a reader
    trying them in turn would: none trips over what the others sent before it."""
    blocking_send, async_send, consume, transactional = readme_programs()
    half, producer_transaction = readme_programs(WHICH)
    broker = start_broker()
    env = {"HALFMQ_URL": broker.url}
    assert run_program(blocking_send, env, tmp_path).split()[0] == "SEND_OK"
    assert run_program(async_send, env, tmp_path).strip() == "10 sent: ['SEND_OK']"
    order_id, *states = run_program(transactional, {**env, "PORT": str(free_port())}, tmp_path).split()
    assert states == ["commit", "committed"]
    assert run_program(half, env, tmp_path).split() == ["commit", "committed"]
    state, copied, _ = run_program(producer_transaction, env, tmp_path).split()
    assert state == "COMPLETE_COMMIT" and int(copied) >= 1
    credits = [{"order_id": "c-1", "user_id": "u1", "points": 5}, {"order_id": "c-2", "user_id": "u2", "points": 7}]
    httpx.post(f"{broker.url}/v1/topics/ORDERS/messages",
               json={"messages": [{"body": json.dumps(c)} for c in credits]}).raise_for_status()

    sent = {"o-1", *(f"o-{i}" for i in range(2, 12)), order_id, "o-7", "c-1", "c-2"}
    for program, group, done in ((consume, "audit", " received "), (inbox_program(), "credits", "credited ")):
        running = subprocess.Popen([sys.executable, "-c", program], env={**os.environ, **env}, cwd=tmp_path,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                answer = httpx.get(f"{broker.url}/v1/consumer-groups/{group}")
                if answer.status_code == 200 and sum(q["lag"] for t in answer.json()["topics"] for q in t["queues"]) == 0:
                    break
                time.sleep(0.2)
        finally:
            running.send_signal(signal.SIGTERM)
            out, err = running.communicate(timeout=30)
        assert running.returncode == 0 and "Traceback" not in err and "Error" not in err, out + err
        seen = {line.split()[-1] for line in err.splitlines() if done in line}
        assert seen == (sent if group == "audit" else {"c-1", "c-2"}), err
    with sqlite3.connect(tmp_path / "credits.db") as db:
        assert dict(db.execute("SELECT user_id, points FROM balances")) == {"u1": 5, "u2": 7}
