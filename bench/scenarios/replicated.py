"""`replicated`: a broker set of three local brokers and etcd against one broker, in the same run.

Cases: durable single-message sends at 64 in flight on one broker
(``single_c64``) and on the leader of a three-node set with ``ack=quorum``
(``quorum_c64``, only SEND_OK counts; anything else is an error), and the
failover time, at least 20 times each (``runs`` on --quick): kill -9 of the
leader (``failover``), or SIGSTOP of it (``failover_sigstop``; SIGCONT once
another node acknowledges), then the time until another node answers a quorum
send with SEND_OK, with the broker's default lease TTL (2 s). The set's term is
read every 0.2 s during the quorum runs: each change is an election
(``quorum_c64.elections``, which must stay 0: a healthy leader under load keeps
its lease). The gates: quorum sends at least 0.5x the single broker, failover
p50 at most 2 s and max at most 3 s. The NATS JetStream peer (three
``nats-server`` with R3) is a peer script's figure, not run here.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import orjson

from .. import payloads, probe
from ..context import Context
from ..load import Run, drive, http_session, run_async
from ..results import scenario_ok, scenario_unavailable, throughput_case, timed_case
from ..servers import BrokerServer, EtcdServer

TOPIC = "BENCH_REPLICATED"
NODES = 3
LEASE_TTL = 2  # the broker's default (HALFMQ_BROKER_LEASE_TTL)
KILLS = 20  # per failover case, at least (p50 and max over them)


def baselines(driver: str) -> list[str]:
    return []


async def _quorum_sends(url: str, body: bytes, conc: int, seconds: float, max_ops: int) -> Run:
    async with http_session(conc) as session:
        async def op() -> int:
            async with session.post(url, data=body, headers={"content-type": "application/json"}) as resp:
                answer = await resp.read()
            if resp.status != 200 or orjson.loads(answer)["results"][0]["status"] != "SEND_OK":
                raise RuntimeError(f"not acknowledged: {resp.status} {answer[:200]!r}")
            return 1

        return await drive(lambda _i: op, conc, seconds, max_ops)


def _measure(url: str, body: bytes, conc: int, seconds: float, max_ops: int, warmup: float) -> Run:
    """A warm-up (discarded), then the measured run."""
    if warmup > 0:
        run_async(_quorum_sends(url, body, conc, warmup, max_ops))
    return run_async(_quorum_sends(url, body, conc, seconds, max_ops))


def _leader(nodes: dict[str, BrokerServer], timeout: float = 60.0, not_: str | None = None) -> str:
    """The node taking quorum writes (a majority in sync)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for node_id, node in nodes.items():
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


def _acknowledged(url: str) -> bool:
    try:
        answer = httpx.post(f"{url}/v1/topics/{TOPIC}/messages", json={"messages": [{"body": "failover"}]}, timeout=2)
    except httpx.HTTPError:
        return False
    return answer.status_code == 200 and answer.json()["results"][0]["status"] == "SEND_OK"


@contextmanager
def _terms_seen(nodes: dict[str, BrokerServer], every: float = 0.2) -> Iterator[set[int]]:
    """The set's terms as its nodes report them, read every ``every`` s while the block runs (more than one: an election)."""
    terms: set[int] = set()
    done = threading.Event()

    def poll() -> None:
        with httpx.Client(timeout=1) as client:
            while not done.is_set():
                for node in nodes.values():
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


def _failovers(ctx: Context, nodes: dict[str, BrokerServer], name: str, times: int,
               fault: Callable[[BrokerServer], None], heal: Callable[[BrokerServer], None]) -> list[dict[str, Any]]:
    """``times`` faults of the leader: each time from the fault until another node acknowledges a quorum send."""
    failovers: list[dict[str, Any]] = []
    for i in range(times):
        leader = _leader(nodes)
        time.sleep(0.5)  # every follower fetching again after the last failover
        faulted = time.monotonic()
        fault(nodes[leader])
        try:
            new = _leader(nodes, not_=leader)
            while not _acknowledged(nodes[new].url):
                time.sleep(0.02)
            seconds = time.monotonic() - faulted
        finally:
            heal(nodes[leader])
        failovers.append({"seconds": round(seconds, 3), "faulted": leader, "new_leader": new,
                          "phases": _phases(nodes[new].url)})
        ctx.note(f"replicated {name} {i + 1}/{times}: {leader} down, {new} acknowledging after {seconds:.2f} s")
        _leader(nodes)
        _all_in_sync(nodes)
    return failovers


def _phases(url: str) -> dict[str, float] | None:
    """The new leader's own account of the failover (``last_failover.phases`` in /v1/cluster), if it has it yet."""
    try:
        last = httpx.get(f"{url}/v1/cluster", timeout=2).json().get("last_failover") or {}
    except (httpx.HTTPError, ValueError):
        return None
    phases: dict[str, float] | None = last.get("phases")
    return phases


def _all_in_sync(nodes: dict[str, BrokerServer], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            view = httpx.get(f"{nodes[_leader(nodes)].url}/v1/cluster", timeout=1).json()
        except (httpx.HTTPError, ValueError):
            view = {}
        if len(view.get("in_sync") or []) == NODES:
            return
        time.sleep(0.1)
    raise RuntimeError(f"the set did not get all {NODES} nodes in sync within {timeout}s")


def _kill9(node: BrokerServer) -> None:
    node.kill9()


def _restart(node: BrokerServer) -> None:
    node.start(timeout=60)


def _signal(sig: signal.Signals) -> Callable[[BrokerServer], None]:
    def send(node: BrokerServer) -> None:
        if node.pid is not None:
            os.kill(node.pid, sig)  # a child this scenario started, by its pid
    return send


def run(ctx: Context) -> dict[str, Any]:
    if shutil.which("etcd") is None:
        return scenario_unavailable("etcd is not installed (bin/setup installs Debian's etcd-server)")
    s = ctx.settings
    c = s.concurrency
    body = payloads.send(1, s.body_bytes)
    cases = ctx.cases()

    single = BrokerServer(ctx.dir("replicated", "single"), ctx.logs)
    with single:
        single.start()
        probe.create_topic(single.url, TOPIC, 4)
        url = f"{single.url}/v1/topics/{TOPIC}/messages"
        runs = ctx.repeat("replicated single_c64", lambda _i, w: _measure(url, body, c, s.seconds, s.max_ops, w))
    cases["single_c64"] = throughput_case(runs, unit="msg/s", concurrency=c, what=f"one broker: durable single-message send, {c} in flight")

    etcd = EtcdServer(ctx.dir("replicated", "etcd"), ctx.logs)
    nodes: dict[str, BrokerServer] = {}
    kills = s.runs if s.quick else max(KILLS, s.runs)
    try:
        etcd.start()
        for i in range(1, NODES + 1):
            node = BrokerServer(ctx.dir("replicated", f"n{i}"), ctx.logs, env={
                "HALFMQ_BROKER_CLUSTER": f"etcd://127.0.0.1:{etcd.port}/bench", "HALFMQ_BROKER_NODE_ID": f"n{i}",
                "HALFMQ_BROKER_CLUSTER_SIZE": str(NODES), "HALFMQ_BROKER_LEASE_TTL": str(LEASE_TTL), "HALFMQ_BROKER_ACK": "quorum"})
            node.env["HALFMQ_BROKER_ADVERTISE_URL"] = node.url
            nodes[f"n{i}"] = node
        members = ",".join(f"{node_id}={node.url}" for node_id, node in nodes.items())
        for node in nodes.values():
            node.env["HALFMQ_BROKER_CLUSTER_MEMBERS"] = members  # the set's members (required in a set)
            node.spawn()
        for node in nodes.values():
            node.wait_healthy(60)
        leader = _leader(nodes)
        probe.create_topic(nodes[leader].url, TOPIC, 4)
        url = f"{nodes[leader].url}/v1/topics/{TOPIC}/messages"
        started = time.monotonic()
        with _terms_seen(nodes) as terms:
            runs = ctx.repeat("replicated quorum_c64", lambda _i, w: _measure(url, body, c, s.seconds, s.max_ops, w))
        cases["quorum_c64"] = throughput_case(runs, unit="msg/s", concurrency=c, what=(
            f"leader of a {NODES}-node set, ack=quorum: durable single-message send, {c} in flight"))
        cases["quorum_c64"].update(elections=max(0, len(terms) - 1), terms=sorted(terms),  # must stay 0: nobody lost its lease
                                   elections_observed_s=round(time.monotonic() - started, 1))
        ctx.note(f"replicated elections under load: {max(0, len(terms) - 1)} in {time.monotonic() - started:.0f} s")
        cases["failover"] = timed_case(_failovers(ctx, nodes, "failover", kills, _kill9, _restart), what=(
            f"kill -9 of the leader → another node answers a quorum send SEND_OK (lease TTL {LEASE_TTL} s, {kills} kills)"))
        cases["failover_sigstop"] = timed_case(_failovers(
            ctx, nodes, "failover_sigstop", kills, _signal(signal.SIGSTOP), _signal(signal.SIGCONT)), what=(
            f"SIGSTOP of the leader → another node answers a quorum send SEND_OK (lease TTL {LEASE_TTL} s, {kills} times)"))
    finally:
        for node in nodes.values():
            if node.alive and node.pid is not None:
                os.kill(node.pid, signal.SIGCONT)  # a stopped child cannot take its SIGTERM
            node.stop()
        etcd.stop()
    single_median = cases["single_c64"]["ops_per_s"]["median"]
    if single_median:
        cases["quorum_c64"]["ratio_to_single"] = round(cases["quorum_c64"]["ops_per_s"]["median"] / single_median, 2)
    return scenario_ok(cases, nodes=NODES, lease_ttl_s=LEASE_TTL, ack="quorum", body_bytes=s.body_bytes)
