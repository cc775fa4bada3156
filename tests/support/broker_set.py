"""A broker set for tests: real etcd, N real broker processes (``halfmq broker --cluster ...``) on free ports.

Every node is configured with all N as the set's members; on an etcd with auth on it logs in as etcd's ``halfmq`` user.
For the queue checker a set can also give each node its own loopback address (``hosts``), start each node inside
a process group of its own that the caller names (``wrap``: a cgroup for partitions) and put each node's data dir
on its own tmpfs (``disk_size``: ``disks[node]`` fills and frees it).
"""

from __future__ import annotations

import os
import signal
import ssl
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import httpx

from .etcd import EtcdProcess
from .processes import BrokerProcess
from .small_disk import SmallDisk
from .tls import TlsFiles


class BrokerSet:
    def __init__(self, etcd: EtcdProcess, root: Path, size: int = 3, prefix: str = "set", env: dict[str, str] | None = None,
                 token: str | None = None, hosts: Sequence[str] | None = None,
                 wrap: Callable[[str, list[str]], list[str]] | None = None, disk_size: int | None = None,
                 tls: TlsFiles | None = None) -> None:
        """``token``: with broker auth on (HALFMQ_BROKER_AUTH_FILE in ``env``), one that may describe the cluster, for ``view``.

        ``hosts``: node i listens on ``hosts[i-1]``; ``wrap(node_id, argv)``: the command that starts that node;
        ``disk_size``: each node's data dir on a tmpfs of that many bytes (mounted now, unmounted by ``stop``);
        ``tls``: every node serves HTTPS with that certificate (members' URLs are https) and trusts that CA for its peers.
        """
        self.etcd = etcd
        self.token = token
        self.tls = tls
        self.nodes: dict[str, BrokerProcess] = {}
        self.disks: dict[str, SmallDisk] = {}
        for i in range(1, size + 1):
            node_id = f"n{i}"
            data_dir = root / node_id
            if disk_size is not None:
                self.disks[node_id] = SmallDisk(root / f"{node_id}-disk", disk_size).mount()
                data_dir = self.disks[node_id].path / node_id
            served = {"HALFMQ_BROKER_TLS_CERT_FILE": str(tls.cert), "HALFMQ_BROKER_TLS_KEY_FILE": str(tls.key),
                      "HALFMQ_BROKER_PEER_CA_FILE": str(tls.ca)} if tls else {}
            node = BrokerProcess(data_dir, root, env={
                "HALFMQ_BROKER_CLUSTER": etcd.cluster_url(prefix), "HALFMQ_BROKER_NODE_ID": node_id,
                "HALFMQ_BROKER_CLUSTER_SIZE": str(size), "HALFMQ_BROKER_SEGMENT_BYTES": str(1 << 20), **served, **(env or {}),
            }, ca_file=tls.ca if tls else None)
            if hosts is not None:
                node.url = f"{'https' if tls else 'http'}://{hosts[i - 1]}:{node.port}"
                node.health_url = f"{node.url}/healthz"
                node.argv += ["--host", hosts[i - 1]]
            if wrap is not None:
                node.argv = wrap(node_id, node.argv)
            node.env["HALFMQ_BROKER_ADVERTISE_URL"] = node.url
            self.nodes[node_id] = node
        members = ",".join(f"{node_id}={node.url}" for node_id, node in self.nodes.items())
        for node in self.nodes.values():  # the configured members, and the etcd user when etcd has auth on
            node.env.update({"HALFMQ_BROKER_CLUSTER_MEMBERS": members, **etcd.broker_env()})

    @property
    def verify(self) -> ssl.SSLContext | bool:
        """What a test's client verifies the nodes with (httpx's ``verify``): the set's CA when it serves HTTPS."""
        return ssl.create_default_context(cafile=self.tls.ca) if self.tls else True

    @property
    def urls(self) -> list[str]:
        return [n.url for n in self.nodes.values()]

    def start(self) -> BrokerSet:
        for node in self.nodes.values():
            node.spawn()
        for node in self.nodes.values():
            node.start(timeout=60) if not node.alive else node.wait_healthy(60)
        return self

    def stop(self) -> None:
        """Stop every live node; one a test left SIGSTOPped is resumed first, so it can shut down within its grace."""
        for node in self.nodes.values():
            if node.alive:
                os.kill(node.pid, signal.SIGCONT)  # type: ignore[arg-type]
                node.stop(grace=10)
        for disk in self.disks.values():
            disk.unmount()

    def view(self, node_id: str) -> dict | None:
        try:
            answer = httpx.get(f"{self.nodes[node_id].url}/v1/cluster", timeout=2, verify=self.verify,
                               headers={"authorization": f"Bearer {self.token}"} if self.token else None)
        except httpx.HTTPError:
            return None
        return answer.json() if answer.status_code == 200 else None

    def leader(self, timeout: float = 30.0, not_: str | None = None) -> str:
        """The node that leads and takes quorum writes (a majority in sync), waiting up to ``timeout`` for one (other than ``not_``)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node_id, node in self.nodes.items():
                if node_id == not_ or not node.alive:
                    continue
                view = self.view(node_id)
                if view and view["writable"] and len(view.get("in_sync") or []) > len(self.nodes) // 2:
                    return node_id
            time.sleep(0.1)
        raise AssertionError(f"no leader within {timeout}s")

    def caught_up(self, timeout: float = 30.0) -> None:
        """Wait until every live node's log is as long as the leader's and fsynced."""
        deadline = time.monotonic() + timeout
        views: list[dict | None] = []
        while time.monotonic() < deadline:
            views = [self.view(n) for n, p in self.nodes.items() if p.alive]
            if all(views):
                ends = {v["durable_offset"] for v in views if v} | {v["log_end"] for v in views if v}
                if len(ends) == 1:
                    return
            time.sleep(0.1)
        seen = [{k: v.get(k) for k in ("node_id", "role", "term", "leader", "log_end", "durable_offset", "etcd_error")} if v else None
                for v in views]
        raise AssertionError(f"the nodes did not catch up: {seen}")

    def log_bytes(self, node_id: str) -> bytes:
        commitlog = self.nodes[node_id].data_dir / "commitlog"
        return b"".join(p.read_bytes() for p in sorted(commitlog.iterdir()))
