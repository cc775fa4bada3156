"""The repository's docker-compose.yml (and its overlays) driven through the Compose CLI, as a user would run it.

Compose v2 (`docker compose`) is used where the Docker CLI has it, else Debian's `docker-compose`
1.29; HALFMQ_COMPOSE (e.g. "docker-compose") chooses explicitly.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.processes import ROOT

COMPOSE_FILE = ROOT / "docker-compose.yml"
REPLICATED_OVERLAY = ROOT / "docker-compose.replicated.yml"  # etcd with auth and three broker nodes, over COMPOSE_FILE

# Run by `python -c` inside a service's container: one HTTP call on the compose network, answered as
# {"status": code (0: no answer), "body": the JSON answer or its text}. argv: METHOD URL [BODY [TOKEN_FILE]].
HTTP_FROM_INSIDE = """
import json, sys, urllib.error, urllib.request
method, url, body, token_file = (sys.argv[1:] + ["", ""])[:4]
headers = {"content-type": "application/json"}
if token_file:
    headers["authorization"] = "Bearer " + open(token_file).read().strip()
call = urllib.request.Request(url, data=body.encode() or None, headers=headers, method=method)
try:
    with urllib.request.urlopen(call, timeout=5) as answer:
        status, text = answer.status, answer.read().decode()
except urllib.error.HTTPError as refused:
    status, text = refused.code, refused.read().decode()
except OSError as failed:
    status, text = 0, repr(failed)
try:
    found = json.loads(text)
except ValueError:
    found = text
print(json.dumps({"status": status, "body": found}))
"""


def compose_command(env: dict[str, str]) -> list[str]:
    chosen = os.environ.get("HALFMQ_COMPOSE")
    if chosen:
        return shlex.split(chosen)
    if subprocess.run(["docker", "compose", "version"], env=env, capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    raise RuntimeError("neither `docker compose` nor `docker-compose` is installed (bin/setup --with-docker installs the latter)")


def published_ports(service: dict) -> dict[str, str]:
    """{container port: host port} from a `config` output's ports, in 1.29's "HOST:PUBLISHED:TARGET/tcp" or v2's long form."""
    found = {}
    for port in service.get("ports", []):
        if isinstance(port, dict):
            found[str(port["target"])] = str(port["published"])
        else:
            published, target = port.split("/")[0].rsplit(":", 2)[-2:]
            found[target] = published
    return found


class ComposeStack:
    """``ports``: {service: host port} published on 127.0.0.1 (HALFMQ_COMPOSE_<SERVICE>_PORT in the file)."""

    def __init__(self, project: str, env: dict[str, str], ports: dict[str, int], files: tuple[Path, ...] = (COMPOSE_FILE,)) -> None:
        self.ports = ports
        self.env = env | {f"HALFMQ_COMPOSE_{service.upper()}_PORT": str(port) for service, port in ports.items()}
        self.command = compose_command(self.env)
        self.argv = [*self.command, "-p", project, *[arg for file in files for arg in ("-f", str(file))]]
        self.containers: dict[str, str] = {}  # a container keeps its id across restarts

    def __call__(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*self.argv, *args], env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"{' '.join(self.command)} {' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
        return done

    def docker(self, *args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(["docker", *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and done.returncode != 0:
            raise AssertionError(f"docker {' '.join(args)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
        return done

    def url(self, service: str) -> str:
        return f"http://127.0.0.1:{self.ports[service]}"

    def version(self) -> str:
        return self("version", "--short").stdout.strip()

    def container(self, service: str) -> str:
        if service not in self.containers:
            found = self("ps", "-q", service).stdout.split()
            assert found, f"{service} has no container"
            self.containers[service] = found[0]
        return self.containers[service]

    def state(self, service: str) -> dict:
        return json.loads(self.docker("inspect", "--format", "{{json .State}}", self.container(service)).stdout)

    def kill9(self, service: str) -> int:
        """kill -9 of the service's main process, as a crash would; returns its pid.

        Sent from the host's pid namespace: `docker kill` is a manual stop that the restart policy
        leaves down, and from inside the container the kernel does not deliver it to pid 1.
        """
        pid = self.state(service)["Pid"]
        image = self.docker("inspect", "--format", "{{.Image}}", self.container(service)).stdout.strip()
        self.docker("run", "--rm", "--pid", "host", "--user", "root", "--entrypoint", "sh", image, "-c", f"kill -9 {pid}")
        return pid

    def restarts(self, service: str) -> int:
        """How often Docker's restart policy has restarted the service's container."""
        return int(self.docker("inspect", "--format", "{{.RestartCount}}", self.container(service)).stdout)

    def health(self, service: str) -> str:
        state = self.state(service)
        return (state.get("Health") or {}).get("Status") or state.get("Status", "?")

    def wait_healthy(self, services: list[str], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            status = {s: self.health(s) for s in services}
            if all(v == "healthy" for v in status.values()):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"not healthy after {timeout:.0f} s: {status}\n{self.logs()}")
            time.sleep(1)

    def logs(self, tail: int = 30) -> str:
        return self("logs", "--no-color", "--tail", str(tail), check=False).stdout[-8000:]

    def volume_targets(self, service: str) -> list[str]:
        """Where the service's writable named volumes are mounted (a read-only one, like the tokens, is not its to write)."""
        mounts = json.loads(self.docker("inspect", "--format", "{{json .Mounts}}", self.container(service)).stdout)
        return [m["Destination"] for m in mounts if m.get("Type") == "volume" and m.get("RW", True)]

    def http_from(self, service: str, method: str, url: str, body: Any = None, token_file: str = "") -> tuple[int, Any]:
        """One HTTP call made from inside ``service``'s container (names on the compose network, files in its volumes).

        ``token_file``: a path in that container whose token goes as the bearer. Answers (status, JSON or text);
        status 0 when nothing answered.
        """
        argv = [method, url, json.dumps(body) if body is not None else "", token_file]
        done = self("exec", "-T", service, "python", "-c", HTTP_FROM_INSIDE, *argv, timeout=60)
        answer = json.loads(done.stdout.strip().splitlines()[-1])
        return answer["status"], answer["body"]


def base_images(env: dict[str, str]) -> str:
    """Every base image of docker/standins/images made available (present, pulled or a stand-in); what each took."""
    images = subprocess.run([sys.executable, str(ROOT / "docker/standins/build.py")], env=env, capture_output=True, text=True, timeout=1800)
    assert images.returncode == 0, images.stdout[-3000:] + images.stderr[-3000:]
    return "; ".join(
        line.removeprefix("standins: ") for line in images.stdout.splitlines() if line.startswith("standins: ") and ":" in line[10:]
    )
