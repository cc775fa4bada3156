"""The one child-process helper (``halfmq up``, the bench and the tests use it), with real processes.

The child is Python's own ``http.server``: it answers 200 on ``/`` as soon as it listens.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from halfmq.cli.processes.child_process import ChildExited, ChildProcess, free_port, halfmq_command


def http_server(port: int) -> list[str]:
    return [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port)]


def child(tmp_path: Path, argv: list[str] | None = None, port: int | None = None, **kwargs) -> ChildProcess:
    port = port or free_port()
    return ChildProcess("web", argv or http_server(port), {}, f"http://127.0.0.1:{port}/", kwargs.pop("log_path", tmp_path / "web.log"),
                        cwd=tmp_path, **kwargs)


def gone(pid: int) -> bool:
    """Exited: no such process, or a zombie nobody has reaped yet."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def wait_until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_start_returns_once_the_health_url_answers_and_stop_ends_the_child(tmp_path: Path) -> None:
    with child(tmp_path).start(timeout=20) as web:
        assert web.alive and web.starts == 1
        assert 0 < web.healthy_after < 20
        assert web.stop() == -signal.SIGTERM
    assert not web.alive


def test_a_child_that_exits_while_starting_fails_the_start_with_its_log_tail(tmp_path: Path) -> None:
    dying = child(tmp_path, [sys.executable, "-c", "print('no config here', flush=True); raise SystemExit(3)"])
    with pytest.raises(ChildExited, match="web exited with 3 while starting") as raised:
        dying.start(timeout=20)
    assert "no config here" in str(raised.value)
    assert "===== start #1:" in dying.tail()


def test_a_child_that_never_gets_healthy_times_out_and_is_stopped(tmp_path: Path) -> None:
    silent = child(tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(TimeoutError, match="web not healthy after 0.5s"):
        silent.start(timeout=0.5)
    assert silent.proc is not None and silent.proc.returncode == -signal.SIGTERM


def test_the_child_runs_in_its_own_session_so_a_ctrl_c_at_the_parent_does_not_reach_it(tmp_path: Path) -> None:
    with child(tmp_path).start(timeout=20) as web:
        assert web.pid is not None
        assert os.getsid(web.pid) == web.pid != os.getsid(0)


@pytest.mark.parametrize("how", ["stop", "kill9"])
def test_stop_and_kill9_reach_the_processes_the_child_started(tmp_path: Path, how: str) -> None:
    port = free_port()
    script = f"sleep 60 & echo grandchild=$! ; exec {' '.join(http_server(port))}"
    with child(tmp_path, ["sh", "-c", script], port=port).start(timeout=20) as web:
        grandchild = int(web.tail().rsplit("grandchild=", 1)[1].split()[0])
        assert not gone(grandchild)
        getattr(web, how)()
    assert not web.alive
    assert web.proc is not None and web.proc.returncode == (-signal.SIGTERM if how == "stop" else -signal.SIGKILL)
    assert wait_until(lambda: gone(grandchild)), f"pid {grandchild} outlived its parent's {how}"


def test_output_can_go_line_by_line_to_a_callback_instead_of_a_log(tmp_path: Path) -> None:
    lines: list[str] = []
    port = free_port()
    argv = ["sh", "-c", f"echo first; echo second; exec {' '.join(http_server(port))}"]
    with child(tmp_path, argv, port=port, log_path=None, on_line=lines.append).start(timeout=20):
        assert wait_until(lambda: lines[:2] == ["first", "second"]), lines


def test_waiting_stops_early_when_the_caller_is_interrupted(tmp_path: Path) -> None:
    silent = child(tmp_path, [sys.executable, "-c", "import time; time.sleep(60)"])
    interrupted = threading.Event()
    interrupted.set()
    silent.spawn()
    try:
        assert silent.wait_healthy(30, interrupted=interrupted) is False
        assert silent.alive
    finally:
        silent.stop()


def test_restart_is_a_new_process_and_each_start_is_marked_in_the_log(tmp_path: Path) -> None:
    with child(tmp_path).start(timeout=20) as web:
        first = web.pid
        web.restart(timeout=20)
        assert web.alive and web.pid != first and web.starts == 2
        assert "===== start #2:" in web.tail()


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace_period(tmp_path: Path) -> None:
    port = free_port()
    argv = ["sh", "-c", f"trap '' TERM; exec {' '.join(http_server(port))}"]  # an ignored signal stays ignored over exec
    with child(tmp_path, argv, port=port).start(timeout=20) as web:
        started = time.monotonic()
        assert web.stop(grace=0.5) == -signal.SIGKILL
    assert time.monotonic() - started < 10


def test_halfmq_command_runs_the_cli_of_this_interpreter() -> None:
    done = subprocess.run(halfmq_command("--version"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("halfmq ")


PARENT = """
import sys, time
from pathlib import Path
from halfmq.cli.processes.child_process import ChildProcess
child = ChildProcess("sleeper", [sys.executable, "-c", sys.argv[1]], {}, "http://127.0.0.1:9/", Path(sys.argv[2]))
child.spawn()
print(child.pid, flush=True)
time.sleep(120)
"""
SLEEPER = """
import os, time
from halfmq.cli.processes.parent_watch import ENV, watch_parent_from_env
watch_parent_from_env(interval=0.05, grace=2)
assert ENV not in os.environ, "the child's own children must not inherit the parent's pid"
time.sleep(120)
"""


def test_a_child_stops_by_itself_when_its_parent_is_killed_9(tmp_path: Path) -> None:
    """A test run killed mid-teardown used to leave its broker and services running with parent pid 1."""
    parent = subprocess.Popen([sys.executable, "-c", PARENT, SLEEPER, str(tmp_path / "sleeper.log")], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)
    try:
        child_pid = int(parent.stdout.readline())  # type: ignore[union-attr]
        time.sleep(0.5)
        assert not gone(child_pid), "the child runs while its parent does"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        assert wait_until(lambda: gone(child_pid), timeout=10), "the child outlived its parent"
    finally:
        if parent.poll() is None:
            parent.kill()
