"""Child processes with a health URL: start, wait until healthy, stop, kill -9, restart.

One helper for everything that runs halfmq's servers as children: ``halfmq up``'s supervisor, the
benchmarks and the tests. Each child gets its own session, so a Ctrl-C aimed at the parent reaches the
parent first, and stop and kill -9 go to the child's process group by its id (never by name): workers a
server forked (granian, uvicorn) go with it.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import httpx

from .parent_watch import ENV as PARENT_ENV

HOST = "127.0.0.1"


class ChildExited(RuntimeError):
    """The child exited before its health URL answered."""


_SPAN = 12_000  # ports handed out lie in the span just below the ephemeral range
_given: set[int] = set()


def free_port(host: str = HOST) -> int:
    """A port nothing listens on, chosen *below* the kernel's ephemeral range and never twice in this process.

    Why not ``bind(0)``: that port comes from the ephemeral range, and between this call and the child's own bind any
    outgoing connection on the machine may take it as its source port (the demo test lost ``--order-port`` that way
    while other tests ran). Below the range only another server's explicit bind can take it."""
    low = ephemeral_low()
    if low - _SPAN >= 1024:
        for _ in range(200):
            port = random.randrange(low - _SPAN, low)
            if port in _given:
                continue
            with socket.socket() as sock:
                try:
                    sock.bind((host, port))
                except OSError:
                    continue
            _given.add(port)
            return port
    with socket.socket() as sock:  # a machine whose ephemeral range starts low: the kernel's choice
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def ephemeral_low(path: str = "/proc/sys/net/ipv4/ip_local_port_range") -> int:
    """The first port of the kernel's ephemeral range (32768 if it cannot be read: Linux's default)."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_taken(host: str, port: int) -> bool:
    """True if something listens on ``host:port`` (a bind without SO_REUSEPORT fails), so a server started there would not be ours."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed server's TIME_WAIT is no owner
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def parent_pid(pid: int) -> int | None:
    """The parent of process ``pid`` (Linux /proc), or None if there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # after "pid (comm)": state, ppid


def halfmq_command(*args: str) -> list[str]:
    """``halfmq <args>`` with this interpreter, so a child runs the same installation as its parent."""
    return [sys.executable, "-m", "halfmq.cli.main", *args]


def health_client(verify: bool | str = True, timeout: float = 1.0) -> httpx.Client:
    """One client for every poll of a start; ``verify`` is a CA file for a child serving HTTPS with a certificate of its
    own CA. (A client per poll built a TLS context each time: about 40 ms of CPU a poll, every 50 ms, spent by the
    waiting process beside the child it waits for.)"""
    tls: Any = ssl.create_default_context(cafile=verify) if isinstance(verify, str) else verify
    return httpx.Client(timeout=timeout, verify=tls)


def answers_200(client: httpx.Client, url: str) -> bool:
    try:
        return client.get(url).status_code == 200
    except httpx.HTTPError:
        return False


class ChildProcess:
    """One child process and its health URL.

    Output goes to ``log_path`` (appended, its tail shown when a start fails) or, with ``on_line``, to
    that callback line by line; with neither it is inherited. Subclasses set their own start defaults.
    """

    start_timeout = 30.0
    health_poll = 0.05

    def __init__(self, name: str, argv: list[str], env: dict[str, str], health_url: str, log_path: Path | None = None,
                 *, verify: bool | str = True, cwd: Path | None = None,
                 on_line: Callable[[str], None] | None = None) -> None:
        self.name = name
        self.argv = argv
        self.env = env
        self.health_url = health_url
        self.log_path = log_path
        self.verify = verify
        self.cwd = cwd
        self.on_line = on_line
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.started_at = 0.0  # perf_counter at the last spawn
        self.healthy_after = 0.0  # seconds from that spawn to the first 200 of the health URL

    def spawn(self) -> None:
        """Start the process without waiting for it."""
        # A halfmq child stops by itself if this process dies without stopping it (parent_watch).
        env = {**os.environ, **self.env, PARENT_ENV: str(os.getpid())}
        self.starts += 1
        if self.on_line is not None:
            self.started_at = time.perf_counter()
            self.proc = subprocess.Popen(self.argv, env=env, cwd=self.cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         text=True, bufsize=1, start_new_session=True)
            threading.Thread(target=self._pump, args=(self.proc.stdout, self.on_line), daemon=True).start()
            return
        log = open(self.log_path, "ab") if self.log_path is not None else None
        try:
            if log is not None:
                log.write(f"\n===== start #{self.starts}: {' '.join(self.argv)}\n".encode())
                log.flush()
            self.started_at = time.perf_counter()
            self.proc = subprocess.Popen(self.argv, env=env, cwd=self.cwd, stdout=log, stderr=subprocess.STDOUT if log else None,
                                         start_new_session=True)
        finally:
            if log is not None:
                log.close()

    @staticmethod
    def _pump(stream: IO[str], on_line: Callable[[str], None]) -> None:
        for line in stream:
            on_line(line.rstrip("\n"))

    def wait_healthy(self, timeout: float, poll: float = 0.05, interrupted: threading.Event | None = None) -> bool:
        """True once the health URL answers 200; False if ``interrupted`` is set first.

        Raises :class:`ChildExited` if the child exits first and :class:`TimeoutError` after ``timeout``.
        """
        deadline = time.perf_counter() + timeout
        with health_client(self.verify) as client:
            while time.perf_counter() < deadline:
                if interrupted is not None and interrupted.is_set():
                    return False
                if self.proc is not None and self.proc.poll() is not None:
                    raise ChildExited(f"{self.name} exited with {self.proc.returncode} while starting{self._tail_note()}")
                if answers_200(client, self.health_url):
                    self.healthy_after = time.perf_counter() - self.started_at
                    return True
                time.sleep(poll)
        raise TimeoutError(f"{self.name} not healthy after {timeout}s{self._tail_note()}")

    def start(self, timeout: float | None = None, poll: float | None = None) -> ChildProcess:
        """Spawn and wait until healthy; a child that never gets healthy is stopped before the error is raised."""
        self.spawn()
        try:
            self.wait_healthy(self.start_timeout if timeout is None else timeout, self.health_poll if poll is None else poll)
        except TimeoutError:
            self.stop()
            raise
        return self

    def _signal_group(self, sig: signal.Signals) -> bool:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
            return True
        except ProcessLookupError:
            return False

    def stop(self, grace: float = 15.0, sig: signal.Signals = signal.SIGTERM) -> int | None:
        """``sig`` to the child's process group, SIGKILL after ``grace`` seconds; the exit code (None if never started).

        ``sig=SIGINT`` is what a Ctrl-C in the child's terminal would send.
        """
        if self.proc is None:
            return None
        if self.proc.poll() is None and self._signal_group(sig):
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.kill9()
        return self.proc.wait()

    def kill9(self) -> None:
        """SIGKILL to the child's process group: a crash, nothing gets to clean up."""
        if self.proc is not None and self.proc.poll() is None:
            self._signal_group(signal.SIGKILL)
            self.proc.wait(10)

    def restart(self, timeout: float | None = None) -> None:
        self.stop()
        self.start(timeout)

    def wait_exit(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def tail(self, lines: int = 60) -> str:
        if self.log_path is None:
            return "(no log)"
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def _tail_note(self) -> str:
        return f":\n{self.tail()}" if self.log_path is not None else ""

    def __enter__(self) -> ChildProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
