"""Server processes a benchmark starts and stops itself: the broker, the services, the baseline app.

Every server is a child process on 127.0.0.1 (a free port, a temporary data
dir), in its own session so a Ctrl-C aimed at the bench reaches the bench
first and the bench stops its children by pid, never by name. The load
driver therefore always runs in a different process from the server it
measures. Output goes to a log file whose tail is shown when a start fails.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOST = "127.0.0.1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def healthy(url: str, timeout: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - loopback only
            return resp.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


class ServerProcess:
    """One child process with a health URL; started in its own session, stopped by its pid."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], health_url: str, log_path: Path) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.health_url = health_url
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0  # perf_counter at Popen
        self.healthy_after = 0.0  # seconds from Popen to the first 200 of the health URL

    def start(self, timeout: float = 60.0, poll: float = 0.02) -> "ServerProcess":
        with open(self.log_path, "ab") as log:
            log.write(f"\n===== {' '.join(self.argv)}\n".encode())
            log.flush()
            self.started_at = time.perf_counter()
            self.proc = subprocess.Popen(
                self.argv, env={**os.environ, **self.env}, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = self.started_at + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} while starting:\n{self.tail()}")
            if healthy(self.health_url, timeout=1.0):
                self.healthy_after = time.perf_counter() - self.started_at
                return self
            time.sleep(poll)
        self.stop()
        raise TimeoutError(f"{self.name} not healthy after {timeout}s:\n{self.tail()}")

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        """SIGKILL to the whole process group we started (uvicorn may have children)."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)

    def stop(self, grace: float = 15.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill9()

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def __enter__(self) -> "ServerProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def halfmq_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "halfmq.cli.main", *args]


# Durable by default (DESIGN section 3); the bench states it rather than relying on the default.
BROKER_ENV = {"HALFMQ_BROKER_FLUSH_MODE": "sync", "HALFMQ_BROKER_LOG_LEVEL": "warning"}


class BrokerServer(ServerProcess):
    def __init__(self, data_dir: Path, log_dir: Path, env: dict[str, str] | None = None, port: int | None = None) -> None:
        self.port = port or free_port()
        self.data_dir = data_dir
        self.url = f"http://{HOST}:{self.port}"
        super().__init__(
            "broker",
            halfmq_command("broker", "--host", HOST, "--port", str(self.port), "--data-dir", str(data_dir)),
            {**BROKER_ENV, **(env or {})},
            f"{self.url}/healthz",
            log_dir / f"broker-{self.port}.log",
        )


class ServiceServer(ServerProcess):
    """`halfmq order` or `halfmq credit` on a free port, SQLite in ``data_dir``."""

    def __init__(self, kind: str, data_dir: Path, log_dir: Path, broker_url: str, env: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        prefix = kind.upper()
        self.database_path = data_dir / f"{kind}.db"
        base = {
            f"{prefix}_HOST": HOST, f"{prefix}_PORT": str(self.port), f"{prefix}_LOG_LEVEL": "warning",
            f"{prefix}_DATABASE_URL": f"sqlite:///{self.database_path}", f"{prefix}_BROKER_URL": broker_url,
        }
        if kind == "order":
            base["ORDER_PUBLIC_URL"] = self.url
        super().__init__(kind, halfmq_command(kind), {**base, **(env or {})}, f"{self.url}/healthz", log_dir / f"{kind}-{self.port}.log")


class BaselineApp(ServerProcess):
    """The baseline FastAPI app (bench/baseline_app.py) on uvicorn + uvloop + httptools, one worker."""

    def __init__(self, log_dir: Path, append_log: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://{HOST}:{self.port}"
        super().__init__(
            "baseline-app",
            [sys.executable, "-m", "uvicorn", "halfmq.bench.baseline_app:app", "--host", HOST, "--port", str(self.port),
             "--workers", "1", "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning"],
            {"BENCH_APPEND_LOG": str(append_log)},
            f"{self.url}/health",
            log_dir / f"baseline-app-{self.port}.log",
        )
