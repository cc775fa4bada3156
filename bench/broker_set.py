"""A broker set the bench starts itself: etcd and three `halfmq broker --cluster` nodes, and what it asks the set.

Used by the ``replicated`` scenario. Every node is a child process of the
bench (``BrokerServer``), stopped by its pid; a node left stopped by SIGSTOP
gets its SIGCONT first, or it could not take its SIGTERM.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

import httpx

from .context import Context
from .servers import BrokerServer, EtcdServer

NODES = 3
LEASE_TTL = 2  # the broker's default (HALFMQ_BROKER_LEASE_TTL)


class BrokerSet:
    """etcd and ``NODES`` brokers with ``HALFMQ_BROKER_ACK=ack``, data under ``ctx.dir(name)``."""

    def __init__(self, ctx: Context, name: str, ack: str = "quorum") -> None:
        self.ack = ack
        self.etcd = EtcdServer(ctx.dir(name, "etcd"), ctx.logs)
        self.nodes: dict[str, BrokerServer] = {}
        for i in range(1, NODES + 1):
            node = BrokerServer(ctx.dir(name, f"n{i}"), ctx.logs, env={
                "HALFMQ_BROKER_CLUSTER": f"etcd://127.0.0.1:{self.etcd.port}/bench", "HALFMQ_BROKER_NODE_ID": f"n{i}", "HALFMQ_BROKER_CLUSTER_SIZE": str(NODES),
                "HALFMQ_BROKER_LEASE_TTL": str(LEASE_TTL), "HALFMQ_BROKER_ACK": ack})
            node.env["HALFMQ_BROKER_ADVERTISE_URL"] = node.url
            self.nodes[f"n{i}"] = node
        members = ",".join(f"{node_id}={node.url}" for node_id, node in self.nodes.items())
        for node in self.nodes.values():
            node.env["HALFMQ_BROKER_CLUSTER_MEMBERS"] = members  # the set's members (required in a set)

    def __enter__(self) -> BrokerSet:
        try:
            self.etcd.start()
            for node in self.nodes.values():
                node.spawn()
            for node in self.nodes.values():
                node.wait_healthy(60)
            self.leader()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def stop(self) -> None:
        for node in self.nodes.values():
            if node.alive and node.pid is not None:
                os.kill(node.pid, signal.SIGCONT)  # a child this bench started, by its pid
            node.stop()
        self.etcd.stop()

    @property
    def urls(self) -> str:
        """Every node, comma-separated: what a service's ``*_BROKER_URL`` takes for a set."""
        return ",".join(node.url for node in self.nodes.values())

    def leader(self, timeout: float = 60.0, not_: str | None = None) -> str:
        """The node taking writes (it says it is writable, with a majority in sync)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for node_id, node in self.nodes.items():
                if node_id == not_ or not node.alive:
                    continue
                try:
                    view = httpx.get(f"{node.url}/v1/cluster", timeout=1).json()
                except (httpx.HTTPError, ValueError):
                    continue
                if view.get("writable") and len(view.get("in_sync") or []) > NODES // 2:
                    return node_id
            time.sleep(0.05)
        raise RuntimeError(f"no leader within {timeout}s")

    def leader_url(self) -> str:
        return self.nodes[self.leader()].url

    def all_in_sync(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                view = httpx.get(f"{self.leader_url()}/v1/cluster", timeout=1).json()
            except (httpx.HTTPError, ValueError):
                view = {}
            if len(view.get("in_sync") or []) == NODES:
                return
            time.sleep(0.1)
        raise RuntimeError(f"the set did not get all {NODES} nodes in sync within {timeout}s")

    @contextmanager
    def terms_seen(self, every: float = 0.2) -> Iterator[set[int]]:
        """The set's terms as its nodes report them, read every ``every`` s while the block runs (more than one: an election)."""
        terms: set[int] = set()
        done = threading.Event()

        def poll() -> None:
            with httpx.Client(timeout=1) as client:
                while not done.is_set():
                    for node in self.nodes.values():
                        try:
                            view = client.get(f"{node.url}/v1/cluster").json()
                        except (httpx.HTTPError, ValueError):
                            continue
                        if view.get("term"):
                            terms.add(int(view["term"]))
                    done.wait(every)

        poller = threading.Thread(target=poll, daemon=True)
        poller.start()
        try:
            yield terms
        finally:
            done.set()
            poller.join(10)
