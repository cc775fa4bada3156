"""Real processes for integration and end-to-end tests: the broker and the services, on free ports.

Starting, waiting, stopping and kill -9 are :class:`halfmq.cli.processes.child_process.ChildProcess`'s, the one
helper the CLI and the bench use too.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterable
from pathlib import Path

from halfmq.cli.processes.child_process import ChildProcess, free_port, halfmq_command

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ROOT", "BrokerProcess", "ManagedProcess", "ServiceProcess", "free_port", "free_port_run", "free_start", "halfmq_command"]


def free_start(ports_of: Callable[[int], Iterable[int]]) -> int:
    """A free port p whose related ports, ``ports_of(p)``, are all free too (a set's consecutive ports, derived gRPC ports)."""
    for _ in range(100):
        start = free_port()
        try:
            for port in ports_of(start):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return start
    raise AssertionError("no free run of ports")


def free_port_run(length: int) -> int:
    """A port p with p..p+length-1 all free (a set's nodes, and etcd's client and peer ports, take consecutive ports)."""
    return free_start(lambda start: range(start, start + length))


class ManagedProcess(ChildProcess):
    """A test's child process: run from the repository root, its output in a log file shown on failure."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], health_url: str, log_path: Path,
                 verify: bool | str = True) -> None:
        super().__init__(name, argv, env, health_url, log_path, verify=verify, cwd=ROOT)


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
            # the RocketMQ front off unless a test asks for it: brokers running side by side would contend for 8081
            {"HALFMQ_BROKER_LOG_LEVEL": "info", "HALFMQ_BROKER_GRPC_PORT": "0", **(env or {})},
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
