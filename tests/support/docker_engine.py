"""A Docker engine for tests: the one that already answers, else a `dockerd` started here.

A started engine keeps its data root in a persistent cache directory, so images and build layers
survive from one test run to the next on the same machine; its socket, exec root and pid file are
its own, and it is stopped when the test session ends.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

CACHE = Path(os.environ.get("HALFMQ_DOCKER_CACHE", "/var/cache/halfmq-docker"))
EXEC_ROOT = Path("/run/halfmq-docker")  # containerd's socket lives here: the path must stay short


def answers(docker_host: str | None) -> bool:
    env = dict(os.environ)
    if docker_host:
        env["DOCKER_HOST"] = docker_host
    try:
        found = subprocess.run(["docker", "version", "--format", "{{.Server.Version}}"], env=env, capture_output=True, timeout=15)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0


class DockerEngine:
    """``host`` is the DOCKER_HOST to use; ``started`` says whether this object owns a dockerd."""

    def __init__(self, cache: Path = CACHE) -> None:
        self.cache = cache
        self.socket = cache / "docker.sock"
        self.log_path = cache / "dockerd.log"
        self.host: str | None = None
        self.pid_file = cache / "dockerd.pid"
        self.pid: int | None = None  # the dockerd this object stops at the end

    @property
    def started(self) -> bool:
        return self.pid is not None

    def start(self, timeout: float = 90.0) -> DockerEngine:
        if answers(os.environ.get("DOCKER_HOST")):
            self.host = os.environ.get("DOCKER_HOST")
            return self
        dockerd = shutil.which("dockerd") or "/usr/sbin/dockerd"
        if not Path(dockerd).exists():
            raise RuntimeError("no Docker engine answers and dockerd is not installed (bin/setup --with-docker installs it)")
        self.host = f"unix://{self.socket}"
        if answers(self.host):  # ours, left running by a run that was killed: adopt it
            self.pid = int(self.pid_file.read_text())
            return self
        self.cache.mkdir(parents=True, exist_ok=True)
        EXEC_ROOT.mkdir(parents=True, exist_ok=True)
        argv = [dockerd, "--data-root", str(self.cache / "data"), "--exec-root", str(EXEC_ROOT),
                "--pidfile", str(self.pid_file), "--host", self.host]
        with open(self.log_path, "ab") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = proc.pid
        deadline = time.monotonic() + timeout
        while not answers(self.host):
            if proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"dockerd did not come up; the end of {self.log_path}:\n{self.tail()}")
            time.sleep(0.5)
        return self

    def stop(self, timeout: float = 60.0) -> None:
        if self.pid is None:
            return
        pid, self.pid = self.pid, None
        try:
            os.kill(pid, signal.SIGTERM)  # dockerd stops its containers and its containerd
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if os.waitpid(pid, os.WNOHANG) != (0, 0):
                    return
            except ChildProcessError:  # not our child (adopted): poll for its end
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    return
            time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)

    def env(self) -> dict[str, str]:
        """The environment for docker and compose commands against this engine."""
        env = dict(os.environ)
        if self.host:
            env["DOCKER_HOST"] = self.host
        return env

    def tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""
