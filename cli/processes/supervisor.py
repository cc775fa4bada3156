"""Run several components as child processes: prefixed logs, health waits, restart on death.

What ``restart: unless-stopped`` does in compose, for ``halfmq up`` on a laptop.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from rich.console import Console
from rich.text import Text

from .child_process import ChildProcess, port_taken


class Component(ChildProcess):
    """One component of ``halfmq up``: its output is printed with its name, in its colour."""

    start_timeout = 60.0
    health_poll = 0.2

    def __init__(self, name: str, argv: list[str], env: dict[str, str], health_url: str, color: str,
                 when_healthy: Callable[[], str | None] | None = None) -> None:
        super().__init__(name, argv, env, health_url)
        self.color = color
        self.restarts = 0
        self.when_healthy = when_healthy  # one step after it answers, before the next component starts; says what it did


class Supervisor:
    def __init__(self, components: list[Component], console: Console | None = None, restart: bool = True,
                 pid_file: Path | None = None) -> None:
        self.components = components
        self.pid_file = pid_file  # {component: pid} of the children running now, for a caller that must signal one
        self.console = console or Console(stderr=True, highlight=False)
        self.restart = restart
        self._stopping = threading.Event()
        self._print_lock = threading.Lock()
        for comp in components:
            comp.on_line = lambda line, comp=comp: self.say(comp.name, comp.color, line)

    def say(self, name: str, color: str, line: str) -> None:
        text = Text(f"{name:>7} | ", style=f"bold {color}")
        text.append(line.rstrip("\n"))
        with self._print_lock:
            self.console.print(text, soft_wrap=True)

    def start(self, comp: Component) -> None:
        """Spawn ``comp`` and wait until it answers; refused if its port is taken before it starts.

        Otherwise another process on that port (a second `up`, someone's broker) would answer the
        health probe in the child's place, and `up` would run with it as if it were its own.
        """
        where = urlsplit(comp.health_url)
        if where.hostname and where.port and port_taken(where.hostname, where.port):
            raise RuntimeError(f"{comp.name}: port {where.port} on {where.hostname} is taken by a process `halfmq up` did not start; "
                               "stop it or choose another port")
        comp.spawn()
        self._write_pids()
        try:
            healthy = comp.wait_healthy(comp.start_timeout, comp.health_poll, interrupted=self._stopping)
        except TimeoutError as exc:
            raise RuntimeError(str(exc)) from None
        if healthy:
            self.say("up", "white", f"{comp.name} healthy at {comp.health_url.rsplit('/', 1)[0]} (pid {comp.pid})")
            if comp.when_healthy is not None:
                done = comp.when_healthy()
                if done:
                    self.say("up", "white", done)

    def run(self) -> int:
        """Start everything in order, keep it running until a signal; return an exit code."""
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for comp in self.components:
                self.start(comp)
            self.say("up", "white", "all components running; Ctrl-C stops them")
            while not self._stopping.wait(0.5):
                for comp in self.components:
                    if comp.proc is not None and comp.proc.poll() is not None and not self._stopping.is_set():
                        code = comp.proc.returncode
                        if not self.restart:
                            self.say("up", "red", f"{comp.name} exited with {code}; stopping")
                            return 1
                        comp.restarts += 1
                        backoff = min(5.0, 0.5 * comp.restarts) if time.perf_counter() - comp.started_at < 10 else 0.2
                        self.say("up", "yellow", f"{comp.name} exited with {code}; restarting in {backoff:.1f}s (restart #{comp.restarts})")
                        time.sleep(backoff)
                        try:
                            self.start(comp)
                        except RuntimeError as exc:
                            self.say("up", "red", str(exc))
            return 0
        except RuntimeError as exc:
            self.say("up", "red", str(exc))
            return 1
        finally:
            self.stop()
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _write_pids(self) -> None:
        if self.pid_file is None:
            return
        pids = {comp.name: comp.pid for comp in self.components if comp.pid is not None}
        partial = self.pid_file.with_name(self.pid_file.name + ".tmp")
        partial.write_text(json.dumps(pids))
        os.replace(partial, self.pid_file)

    def _on_signal(self, signum: int, frame: object) -> None:
        self._stopping.set()

    def stop(self) -> None:
        """Stop in reverse start order, each before the next, so consumers never outlive the broker."""
        self._stopping.set()
        for comp in reversed(self.components):
            if comp.proc is None:
                continue
            comp.stop()
            self.say("up", "white", f"{comp.name} stopped")

