"""Server processes a benchmark starts and stops itself: the broker, the services, the baseline app.

Every server is a child process on 127.0.0.1 (a free port, a temporary data
dir), in its own session so a Ctrl-C aimed at the bench reaches the bench
first and the bench stops its children by pid, never by name. The load
driver therefore always runs in a different process from the server it
measures. Output goes to a log file whose tail is shown when a start fails.
"""

from __future__ import annotations

import sys
from pathlib import Path

from halfmq.cli.processes.child_process import HOST, ChildProcess, free_port, halfmq_command

ROOT = Path(__file__).resolve().parents[1]

__all__ = ["HOST", "ROOT", "BaselineApp", "BrokerServer", "EtcdServer", "ServerProcess", "ServiceServer", "free_port", "halfmq_command"]


class ServerProcess(ChildProcess):
    """A server the bench measures: run from the repository root, output in a log file, health polled every 20 ms
    (``healthy_after`` is a figure the bench reports)."""

    start_timeout = 60.0
    health_poll = 0.02

    def __init__(self, name: str, argv: list[str], env: dict[str, str], health_url: str, log_path: Path) -> None:
        super().__init__(name, argv, env, health_url, log_path, cwd=ROOT)


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
    """The peers' FastAPI app (peer_runners/http_app.py) on uvicorn + uvloop + httptools, one worker, as the peers'
    HTTP baselines serve it: the in-run baselines measure the very app the peers' figures were taken with, not a copy.
    ``POST /msg`` validates a ~256-byte JSON body with pydantic and answers; ``POST /append_fsync`` also appends it to
    ``append_log`` and fsyncs inline, blocking the event loop on purpose (the naive durable endpoint a broker must beat).
    """

    def __init__(self, log_dir: Path, append_log: Path, port: int | None = None) -> None:
        self.port = port or free_port()
        self.url = f"http://{HOST}:{self.port}"
        super().__init__(
            "baseline-app",
            [sys.executable, "-m", "uvicorn", "halfmq.bench.peer_runners.http_app:app", "--host", HOST, "--port", str(self.port),
             "--workers", "1", "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--log-level", "warning"],
            {"BENCH_APPEND_LOG": str(append_log)},
            f"{self.url}/health",
            log_dir / f"baseline-app-{self.port}.log",
        )


class EtcdServer(ServerProcess):
    """Debian's etcd (``etcd-server``) on free ports, data in ``data_dir``: a broker set's leadership (replicated scenario)."""

    def __init__(self, data_dir: Path, log_dir: Path) -> None:
        self.port = free_port()
        peer = f"http://{HOST}:{free_port()}"
        self.url = f"http://{HOST}:{self.port}"
        super().__init__("etcd", [
            "etcd", "--name", "bench", "--data-dir", str(data_dir), "--listen-client-urls", self.url,
            "--advertise-client-urls", self.url, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"bench={peer}", "--log-level", "warn",
        ], {}, f"{self.url}/health", log_dir / f"etcd-{self.port}.log")
