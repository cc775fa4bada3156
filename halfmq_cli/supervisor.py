"""Run several components as child processes: prefixed logs, health waits, restart on death.

What ``restart: unless-stopped`` does in compose, for ``halfmq up`` on a laptop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO

import httpx
from rich.console import Console
from rich.text import Text


@dataclass
class Component:
    name: str
    argv: list[str]
    env: dict[str, str]
    health_url: str
    color: str
    proc: subprocess.Popen | None = field(default=None, repr=False)
    restarts: int = 0
    started_at: float = 0.0


class Supervisor:
    def __init__(self, components: list[Component], console: Console | None = None, restart: bool = True) -> None:
        self.components = components
        self.console = console or Console(stderr=True, highlight=False)
        self.restart = restart
        self._stopping = threading.Event()
        self._print_lock = threading.Lock()

    def say(self, name: str, color: str, line: str) -> None:
        text = Text(f"{name:>7} | ", style=f"bold {color}")
        text.append(line.rstrip("\n"))
        with self._print_lock:
            self.console.print(text, soft_wrap=True)

    def _pump(self, comp: Component, stream: IO[str]) -> None:
        for line in stream:
            self.say(comp.name, comp.color, line)

    def start(self, comp: Component, timeout: float = 60.0) -> None:
        comp.proc = subprocess.Popen(
            comp.argv, env={**os.environ, **comp.env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True, bufsize=1, start_new_session=True,
        )
        comp.started_at = time.monotonic()
        threading.Thread(target=self._pump, args=(comp, comp.proc.stdout), daemon=True).start()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self._stopping.is_set():
            if comp.proc.poll() is not None:
                raise RuntimeError(f"{comp.name} exited with {comp.proc.returncode} while starting")
            try:
                if httpx.get(comp.health_url, timeout=1).status_code == 200:
                    self.say("up", "white", f"{comp.name} healthy at {comp.health_url.rsplit('/', 1)[0]} (pid {comp.proc.pid})")
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        if not self._stopping.is_set():
            raise RuntimeError(f"{comp.name} not healthy after {timeout}s")

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
                        backoff = min(5.0, 0.5 * comp.restarts) if time.monotonic() - comp.started_at < 10 else 0.2
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

    def _on_signal(self, signum: int, frame: object) -> None:
        self._stopping.set()

    def stop(self) -> None:
        """Stop in reverse start order, each before the next, so consumers never outlive the broker."""
        self._stopping.set()
        for comp in reversed(self.components):
            if comp.proc is None:
                continue
            if comp.proc.poll() is None:
                comp.proc.send_signal(signal.SIGTERM)
                try:
                    comp.proc.wait(15)
                except subprocess.TimeoutExpired:
                    comp.proc.kill()
                    comp.proc.wait(5)
            self.say("up", "white", f"{comp.name} stopped")


def component_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "halfmq.cli.main", *args]
