"""`halfmq up`: broker, order and credit together, embedded (SQLite files and a local data dir)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .credentials import Credentials, ensure_credentials, ensure_etcd_passwords

if TYPE_CHECKING:  # the supervisor needs rich: loaded when `up` runs, not when the CLI parses
    from .processes.supervisor import Component


@dataclass(frozen=True)
class Topology:
    data_dir: Path
    host: str = "127.0.0.1"
    broker_port: int = 10911
    order_port: int = 8001
    credit_port: int = 8002
    faults: bool = True
    auth: bool = True
    replicas: int = 1  # more than 1: a broker set (design section 12) with a local etcd
    etcd_port: int = 2379
    grpc_port: int | None = None  # the (first) broker's RocketMQ gRPC front; None: each broker derives its own from its HTTP port
    kafka_port: int | None = None  # the (first) broker's Kafka front (docs/kafka.md); node i gets kafka_port + i; 0: off;
    # None: derived from the broker's HTTP port (9092 for 10911), as the gRPC front's is

    @property
    def pid_file(self) -> Path:
        """Where `up` keeps the pids of the children it runs now (``Supervisor.pid_file``)."""
        return self.data_dir.resolve() / "up.pids.json"

    def fronts_env(self, node: int = 0) -> dict[str, str]:
        """The ports of node ``node``'s RocketMQ and Kafka fronts."""
        from halfmq.broker.config import default_kafka_port

        first = default_kafka_port(self.broker_port) if self.kafka_port is None else self.kafka_port
        kafka = {"HALFMQ_BROKER_KAFKA_PORT": str(first + node if first else 0)}
        return kafka if self.grpc_port is None else {"HALFMQ_BROKER_GRPC_PORT": str(self.grpc_port + node if self.grpc_port else 0), **kafka}

    @property
    def broker_url(self) -> str:
        return f"http://{self.host}:{self.broker_port}"

    @property
    def broker_urls(self) -> str:
        """Every broker node, comma-separated, as the services' *_BROKER_URL takes it."""
        return ",".join(f"http://{self.host}:{self.broker_port + i}" for i in range(self.replicas))

    @property
    def order_url(self) -> str:
        return f"http://{self.host}:{self.order_port}"

    @property
    def credit_url(self) -> str:
        return f"http://{self.host}:{self.credit_port}"

    @property
    def order_db(self) -> str:
        return f"sqlite:///{self.data_dir.resolve()}/order.db"

    @property
    def credit_db(self) -> str:
        return f"sqlite:///{self.data_dir.resolve()}/credit.db"

    @property
    def credentials(self) -> Credentials | None:
        """Where `up` keeps the tokens it generated on first start (None with auth off)."""
        return Credentials(self.data_dir.resolve() / "auth") if self.auth else None

    def auth_env(self) -> dict[str, dict[str, str]]:
        creds = self.credentials
        if creds is None:
            return {"broker": {}, "order": {}, "credit": {}}
        return {
            "broker": {"HALFMQ_BROKER_AUTH_FILE": str(creds.auth_file)},
            "order": {"ORDER_BROKER_TOKEN_FILE": str(creds.token_file("order")),
                      "ORDER_CHECK_SECRET_FILE": str(creds.order_check_secret_file)},
            "credit": {"CREDIT_BROKER_TOKEN_FILE": str(creds.token_file("credit"))},
        }

    def components(self, extra_env: dict[str, str] | None = None) -> list[Component]:
        from .processes.child_process import halfmq_command
        from .processes.supervisor import Component

        extra = extra_env or {}
        auth = self.auth_env()
        return [
            *self.broker_components(extra),
            Component("order", halfmq_command("order"), {
                "ORDER_HOST": self.host, "ORDER_PORT": str(self.order_port), "ORDER_DATABASE_URL": self.order_db,
                "ORDER_BROKER_URL": self.broker_urls, "ORDER_PUBLIC_URL": self.order_url,
                "ORDER_FAULTS_ENABLED": "true" if self.faults else "false", **auth["order"], **extra,
            }, f"{self.order_url}/healthz", "magenta"),
            Component("credit", halfmq_command("credit"), {
                "CREDIT_HOST": self.host, "CREDIT_PORT": str(self.credit_port), "CREDIT_DATABASE_URL": self.credit_db,
                "CREDIT_BROKER_URL": self.broker_urls, **auth["credit"], **extra,
            }, f"{self.credit_url}/healthz", "green"),
        ]


    def broker_components(self, extra: dict[str, str]) -> list[Component]:
        """One broker, or with ``replicas`` > 1 a local etcd and that many broker nodes of one set; the last one started
        creates the services' topic, so the services never meet a missing one."""
        components = self._brokers(extra)
        components[-1].when_healthy = self.create_topics
        return components

    def create_topics(self) -> str:
        from .credentials import ORDER_TOPIC, PAYMENT_DUE_TOPIC
        from .processes.topics import ensure_topics

        token = self.credentials.token_file("admin").read_text().strip() if self.credentials is not None else None
        return ensure_topics(self.broker_urls.split(","), [ORDER_TOPIC, PAYMENT_DUE_TOPIC], token)

    def _brokers(self, extra: dict[str, str]) -> list[Component]:
        from .processes.child_process import halfmq_command
        from .processes.supervisor import Component

        auth = self.auth_env()["broker"]
        if self.replicas > 1 and self.credentials is not None:  # the nodes fetch from the leader as admin
            auth = {**auth, "HALFMQ_BROKER_CLUSTER_TOKEN_FILE": str(self.credentials.token_file("admin"))}
        if self.replicas <= 1:
            return [Component("broker", halfmq_command("broker"), {
                "HALFMQ_BROKER_HOST": self.host, "HALFMQ_BROKER_PORT": str(self.broker_port),
                "HALFMQ_BROKER_DATA_DIR": str(self.data_dir.resolve() / "broker"), **self.fronts_env(), **auth, **extra,
            }, f"{self.broker_url}/healthz", "cyan")]
        from .processes.etcd_component import SecuredEtcd

        etcd_url = f"http://{self.host}:{self.etcd_port}"
        peer_url = f"http://{self.host}:{self.etcd_port + 1}"
        nodes: list[Component] = [SecuredEtcd([
            "etcd", "--name", "halfmq", "--data-dir", str(self.data_dir.resolve() / "etcd"),
            "--listen-client-urls", etcd_url, "--advertise-client-urls", etcd_url, "--listen-peer-urls", peer_url,
            "--initial-advertise-peer-urls", peer_url, "--initial-cluster", f"halfmq={peer_url}", "--log-level", "warn",
        ], etcd_url, self.etcd_credentials)]
        auth = {**auth, **self.set_env()}
        for i in range(self.replicas):
            url = f"http://{self.host}:{self.broker_port + i}"
            nodes.append(Component(f"broker-n{i + 1}", halfmq_command("broker"), {
                "HALFMQ_BROKER_HOST": self.host, "HALFMQ_BROKER_PORT": str(self.broker_port + i),
                "HALFMQ_BROKER_DATA_DIR": str(self.data_dir.resolve() / f"broker-n{i + 1}"),
                "HALFMQ_BROKER_CLUSTER": f"etcd://{self.host}:{self.etcd_port}/halfmq", "HALFMQ_BROKER_NODE_ID": f"n{i + 1}",
                "HALFMQ_BROKER_ADVERTISE_URL": url, "HALFMQ_BROKER_CLUSTER_SIZE": str(self.replicas), **self.fronts_env(i), **auth, **extra,
            }, f"{url}/healthz", ("cyan", "blue", "bright_cyan", "bright_blue", "turquoise2")[i % 5]))
        return nodes

    @property
    def etcd_credentials(self) -> Credentials:
        """Where `up` keeps its etcd's root and halfmq passwords (with or without broker auth: etcd always has it)."""
        return Credentials(self.data_dir.resolve() / "auth")

    def set_env(self) -> dict[str, str]:
        """What every node of the set is told besides its own id: the members, and the etcd user to log in as."""
        from .etcd_auth import node_env

        members = ",".join(f"n{i + 1}=http://{self.host}:{self.broker_port + i}" for i in range(self.replicas))
        return {"HALFMQ_BROKER_CLUSTER_MEMBERS": members, **node_env(self.etcd_credentials)}


def add_topology_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, default=Path("./data"), help="broker data and SQLite files (default ./data)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--broker-port", type=int, default=10911)
    parser.add_argument("--order-port", type=int, default=8001)
    parser.add_argument("--credit-port", type=int, default=8002)
    parser.add_argument("--grpc-port", type=int, help="the broker's RocketMQ gRPC front (with --replicas, node i gets GRPC_PORT+i; 0 off); "
                                                      "default: derived from the broker's port, 8081 for 10911")
    parser.add_argument("--kafka-port", type=int, help="the broker's Kafka front (docs/kafka.md; with --replicas, node i gets "
                                                       "KAFKA_PORT+i; 0 off); default: derived from the broker's port, 9092 for 10911")
    parser.add_argument("--no-auth", action="store_true",
                        help="run the broker without tokens (loopback only); by default `up` generates them into DATA_DIR/auth")


def topology_from(args: argparse.Namespace, faults: bool = True) -> Topology:
    return Topology(args.data_dir, args.host, args.broker_port, args.order_port, args.credit_port, faults, not args.no_auth,
                    replicas=getattr(args, "replicas", 1), etcd_port=getattr(args, "etcd_port", 2379), grpc_port=args.grpc_port,
                    kafka_port=getattr(args, "kafka_port", None))


def cmd_up(args: argparse.Namespace) -> int:
    topology = topology_from(args, faults=not args.no_faults)
    topology.data_dir.mkdir(parents=True, exist_ok=True)
    if topology.credentials is not None:
        creds, made = ensure_credentials(topology.credentials.directory)
        print(f"auth on: {'generated' if made else 'using'} tokens in {creds.directory} (admin token: {creds.token_file('admin')})", flush=True)
    if topology.replicas > 1:
        etcd_creds, made = ensure_etcd_passwords(topology.etcd_credentials.directory)
        print(f"etcd auth: {'generated' if made else 'using'} passwords in {etcd_creds.directory} (etcd-root.password, etcd-halfmq.password)",
              flush=True)
    from .processes.supervisor import Supervisor

    return Supervisor(topology.components(), restart=not args.no_restart, pid_file=topology.pid_file).run()


def add_parser(sub: argparse._SubParsersAction) -> None:
    up = sub.add_parser("up", help="run broker, order and credit together (Ctrl-C stops all)")
    add_topology_arguments(up)
    up.add_argument("--no-faults", action="store_true", help="refuse X-Fault headers (fault injection is on by default here)")
    up.add_argument("--no-restart", action="store_true", help="stop everything when one component dies")
    up.add_argument("--replicas", type=int, default=1, choices=range(1, 10), metavar="N",
                    help="run a broker set of N nodes (ports BROKER_PORT..BROKER_PORT+N-1) with a local etcd (default 1: one broker)")
    up.add_argument("--etcd-port", type=int, default=2379, help="the local etcd's client port with --replicas (its peer port is the next one)")
    up.set_defaults(func=cmd_up)
