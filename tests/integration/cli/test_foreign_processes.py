"""`halfmq up`, `halfmq demo` and a second broker never touch a process they did not start (issue 30, item 13).

Each test starts a "foreign" process itself (a broker someone else runs), then runs the real command
the way a second user on the machine would, and checks that the foreign process is still alive and
untouched, and that the command said in one line what was in its way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from halfmq.broker.config import default_grpc_port
from tests.support.processes import ROOT, BrokerProcess, ManagedProcess, ServiceProcess, free_port, free_start, halfmq_command


def run_cli(*argv: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "halfmq.cli.main", *argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def assert_untouched(foreign: BrokerProcess) -> None:
    assert foreign.alive, "the foreign broker was killed"
    assert httpx.get(f"{foreign.url}/v1/topics/MINE", timeout=5).status_code == 200, "the foreign broker lost its topic"


@pytest.fixture
def foreign(start_broker) -> BrokerProcess:
    broker = start_broker()
    httpx.post(f"{broker.url}/v1/topics", json={"name": "MINE", "queues": 1}).raise_for_status()
    return broker


def test_healthz_reveals_no_pid_on_the_broker_nor_the_services(foreign: BrokerProcess, tmp_path: Path) -> None:
    health = httpx.get(f"{foreign.url}/healthz").json()
    assert health["status"] == "ok" and "pid" not in health
    for kind in ("order", "credit"):
        with ServiceProcess(kind, tmp_path, {f"{kind.upper()}_DATABASE_URL": f"sqlite:///{tmp_path}/{kind}.db",
                                             f"{kind.upper()}_BROKER_URL": foreign.url}).start() as service:
            body = httpx.get(f"{service.url}/healthz").json()
            assert body["status"] == "ok" and "pid" not in body, body


def test_up_refuses_a_port_another_broker_holds_in_one_line_and_leaves_that_broker_running(foreign: BrokerProcess, tmp_path: Path) -> None:
    result = run_cli("up", "--no-auth", "--no-restart", "--data-dir", str(tmp_path / "up"), "--broker-port", str(foreign.port),
                     "--order-port", str(free_port()), "--credit-port", str(free_port()), "--grpc-port", "0")
    assert result.returncode != 0, result.stdout + result.stderr
    said = [line for line in (result.stdout + result.stderr).splitlines() if f"port {foreign.port}" in line]
    assert said and "did not start" in said[0], result.stdout + result.stderr
    assert "broker healthy" not in result.stdout + result.stderr, "up took the foreign broker's health answer for its own"
    assert_untouched(foreign)


def test_demo_with_a_given_port_that_is_taken_says_which_in_one_line_and_exits(foreign: BrokerProcess, tmp_path: Path) -> None:
    result = run_cli("demo", "--chaos", "--no-spark", "--orders", "5", "--data-dir", str(tmp_path / "demo"), "--broker-port", str(foreign.port))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and f"port {foreign.port} (--broker-port) is taken" in result.stderr, result.stderr
    assert not (tmp_path / "demo").exists(), "the demo started something anyway"
    assert_untouched(foreign)


def test_demo_attached_to_a_running_halfmq_refuses_chaos(foreign: BrokerProcess, tmp_path: Path) -> None:
    result = run_cli("demo", "--attach", "--chaos", "--broker-port", str(foreign.port))
    assert result.returncode == 2 and "--chaos kills only a broker the demo started" in result.stderr, result.stderr
    assert_untouched(foreign)


def _free_pair_with_grpc() -> int:
    """An HTTP port p with p, p+1 and their derived gRPC ports all free."""
    return free_start(lambda start: [start, start + 1, default_grpc_port(start), default_grpc_port(start + 1)])


def test_two_brokers_on_different_http_ports_each_serve_grpc_on_their_derived_port(tmp_path: Path) -> None:
    grpc = pytest.importorskip("grpc")
    first = _free_pair_with_grpc()
    brokers = [ManagedProcess(f"broker-{port}", halfmq_command("broker", "--port", str(port), "--data-dir", str(tmp_path / str(port))),
                              {"HALFMQ_BROKER_LOG_LEVEL": "info"}, f"http://127.0.0.1:{port}/healthz", tmp_path / f"broker-{port}.log")
               for port in (first, first + 1)]
    try:
        for broker in brokers:
            broker.start()
        for port, broker in zip((first, first + 1), brokers, strict=True):
            derived = default_grpc_port(port)
            log = broker.log_path.read_text()  # type: ignore[union-attr]
            assert f"RocketMQ gRPC front on 127.0.0.1:{derived}" in log and "gRPC front off" not in log, log[-2000:]
            with grpc.insecure_channel(f"127.0.0.1:{derived}") as channel:
                grpc.channel_ready_future(channel).result(timeout=10)
    finally:
        for broker in brokers:
            broker.stop()
