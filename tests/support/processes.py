"""Real processes for integration and end-to-end tests: start, wait healthy, kill -9, restart."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ManagedProcess:
    """A child process with a health URL; its output goes to a log file shown on failure."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], health_url: str, log_path: Path,
                 verify: bool | str = True) -> None:
        self.verify = verify  # a CA file when the process serves HTTPS with a test CA
        self.name = name
        self.argv = argv
        self.env = env
        self.health_url = health_url
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, timeout: float = 30.0) -> "ManagedProcess":
        log = open(self.log_path, "ab")
        log.write(f"\n===== start #{self.starts + 1}: {' '.join(self.argv)}\n".encode())
        log.flush()
        self.proc = subprocess.Popen(self.argv, env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
        log.close()
        self.starts += 1
        self.wait_healthy(timeout)
        return self

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}:\n{self.tail()}")
            try:
                if httpx.get(self.health_url, timeout=1.0, verify=_verify(self.verify)).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise TimeoutError(f"{self.name} not healthy after {timeout}s:\n{self.tail()}")

    def kill9(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> int | None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        return self.proc.returncode if self.proc else None

    def restart(self, timeout: float = 30.0) -> None:
        self.stop()
        self.start(timeout)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


def _verify(verify: bool | str) -> Any:
    return ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify


def halfmq_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "halfmq.cli.main", *args]


class BrokerProcess(ManagedProcess):
    def __init__(self, data_dir: Path, log_dir: Path, env: dict[str, str] | None = None, port: int | None = None,
                 ca_file: Path | None = None) -> None:
        """With ``ca_file`` the broker is expected to serve HTTPS (HALFMQ_BROKER_TLS_* in ``env``) with a cert from that CA."""
        self.port = port or free_port()
        self.data_dir = data_dir
        self.url = f"{'https' if ca_file else 'http'}://127.0.0.1:{self.port}"
        super().__init__(
            "broker",
            halfmq_command("broker", "--port", str(self.port), "--data-dir", str(data_dir)),
            {"HALFMQ_BROKER_LOG_LEVEL": "info", **(env or {})},
            f"{self.url}/healthz",
            log_dir / f"broker-{self.port}.log",
            str(ca_file) if ca_file else True,
        )


class ServiceProcess(ManagedProcess):
    """`halfmq order` or `halfmq credit` as a real process on a free port."""

    def __init__(self, kind: str, log_dir: Path, env: dict[str, str], port: int | None = None, ca_file: Path | None = None) -> None:
        self.kind = kind
        self.port = port or free_port()
        self.url = f"{'https' if ca_file else 'http'}://127.0.0.1:{self.port}"
        prefix = kind.upper()
        base_env = {f"{prefix}_PORT": str(self.port), f"{prefix}_LOG_LEVEL": "info"}
        if kind == "order":
            base_env["ORDER_PUBLIC_URL"] = self.url
        super().__init__(kind, halfmq_command(kind), {**base_env, **env}, f"{self.url}/healthz", log_dir / f"{kind}-{self.port}.log",
                         str(ca_file) if ca_file else True)

    def wait_exit(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)
