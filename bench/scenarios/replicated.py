"""`replicated`: a broker set of three local brokers and etcd against one broker, in the same run.

Each case on the set has its twin on one broker in the same run, measured in
turn with it (run 1 of each, run 2 of each, …: a load drifting on a shared
machine weighs on both alike), and its ``ratio_to_single`` is the set's median
over the one broker's:

* sends: durable single-message sends at 64 in flight on one broker
  (``single_c64``), on the leader of a set with ``ack=quorum``
  (``quorum_c64``, only SEND_OK counts; anything else is an error), and on the
  leader of a second set started with ``HALFMQ_BROKER_ACK=leader`` for these
  runs only (``leader_c64``, a diagnostic: what the set costs without waiting
  for followers; the ack mode is the node's setting, there is no per-request
  ack);
* consumption: receive up to 32 + ack, 64 consumers at once, from a backlog
  sent first (``single_consume_ack_c64``, ``consume_ack_c64``); on the set each
  ack answers once its record is quorum-durable;
* orders: the demo's order → credit flow end to end (``bench.scenarios.orders``'s
  driver), its services given the one broker (``orders_c64``,
  ``orders_c64_pg``) or all three nodes (``orders_set_c64``,
  ``orders_set_c64_pg``), on SQLite files and on one durable PostgreSQL;
* failover, at least 20 times each (``runs`` on --quick), after the sends and
  before consumption and orders: kill -9 of the leader (``failover``), or
  SIGSTOP of it (``failover_sigstop``; SIGCONT once another node acknowledges),
  then the time until another node answers a quorum send with SEND_OK, with the
  broker's default lease TTL (2 s);
* ``--soak SECONDS`` adds ``quorum_soak_c64``: quorum sends for that long in
  one run (the plan's F1 check: no election over 10 minutes).

Send and consume cases carry ``cpu_ms_per_msg`` (each broker process, the
driver, total; orders: ``cpu_ms_per_order``), which a shared machine skews
much less than a rate. The set's term is read every 0.2 s during the sends and
the soak: each change is an election (``elections``, which must stay 0: a
healthy leader under load keeps its lease). ``--cases a,b`` runs only the named
cases (and the processes they need). The gates (``bench.gates``): quorum sends
≥ 0.8x one broker and ≥ 1.0x NATS JetStream R3 (a peer script's figure, not
run here), failover p50 ≤ 2 s and max ≤ 3 s, SIGSTOP p50 ≤ 3 s, orders on a set
≥ 0.8x one broker on each database, no election over the soak.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any

import httpx
import orjson

from halfmq.cli.processes.postgres_cluster import PostgresCluster

from .. import cpu, payloads, probe
from ..broker_set import LEASE_TTL, NODES, BrokerSet
from ..context import Context
from ..cpu import HasPid, cpu_ms_per_item, cpu_now
from ..drain import drain
from ..load import Run, drive, http_session, post, run_async
from ..results import scenario_ok, scenario_unavailable, throughput_case, timed_case
from ..servers import BrokerServer
from .orders import orders_runs, orders_summary
from .send import sdk_sends

TOPIC = "BENCH_REPLICATED"
CONSUME_TOPIC = "BENCH_REPLICATED_CONSUME"
QUEUES = 4
KILLS = 20  # per failover case, at least (p50 and max over them)
CONSUMERS = 64
CONSUME_BACKLOG = 200_000  # messages sent before the consume cases (quick: consume_prefill); each run drains it with a new group
SQLITE = "sqlite (WAL, synchronous=FULL)"
POSTGRES = "postgresql (fsync on, synchronous_commit on)"
# (case on one broker, case on the set): the set's figure over the one broker's is the set's ratio_to_single
SDK_CALLERS = (1, 64, 256)  # the SDK's rows (etcd's published 2-vCPU table has this shape)
PAIRS = (("single_c64", "quorum_c64"), ("single_c64", "leader_c64"), ("single_c64", "quorum_soak_c64"),
         *((f"sdk_single_c{c}", f"sdk_set_c{c}") for c in SDK_CALLERS),
         ("single_consume_ack_c64", "consume_ack_c64"), ("orders_c64", "orders_set_c64"), ("orders_c64_pg", "orders_set_c64_pg"))


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


def _with_cpu(servers: Mapping[str, HasPid], measure: Callable[[], Run]) -> Run:
    """``measure()``, and the CPU milliseconds each server and the driver spent per message it carried."""
    before = cpu_now(servers)
    run = measure()
    run.extra["cpu_ms_per_msg"] = cpu_ms_per_item(before, cpu_now(servers), run.items)
    return run


def _send_once(ctx: Context, broker_url: str, servers: Mapping[str, HasPid]) -> Callable[[int, float], Run]:
    """One measured run of single-message sends to ``broker_url`` (after its warm-up, if any), with CPU per message."""
    s = ctx.settings
    probe.create_topic(broker_url, TOPIC, QUEUES)
    url = f"{broker_url}/v1/topics/{TOPIC}/messages"
    body = payloads.send(1, s.body_bytes)

    def once(_i: int, warmup: float) -> Run:
        if warmup > 0:
            _measure(url, body, s.concurrency, warmup, s.max_ops, 0.0)
        return _with_cpu(servers, lambda: _measure(url, body, s.concurrency, s.seconds, s.max_ops, 0.0))
    return once


def _sdk_send_once(ctx: Context, broker_url: str, servers: Mapping[str, HasPid], callers: int) -> Callable[[int, float], Run]:
    """One measured run of the SDK's ``AsyncProducer.send`` from ``callers`` callers (numbered and coalesced, its
    defaults) to ``broker_url`` (one broker, or every node of the set: the SDK finds the leader), with CPU per message."""
    s = ctx.settings
    probe.create_topic(broker_url.split(",")[0], TOPIC, QUEUES)

    def once(_i: int, warmup: float) -> Run:
        return _with_cpu(servers, lambda: run_async(sdk_sends(broker_url, callers, s.seconds, s.max_ops, warmup, s.body_bytes,
                                                              topic=TOPIC)))
    return once


def _cpu_per_msg(runs: list[Run]) -> dict[str, float]:
    return cpu.medians([r.extra.get("cpu_ms_per_msg") or {} for r in runs])


def _backlog(ctx: Context) -> int:
    s = ctx.settings
    return s.consume_prefill if s.quick else CONSUME_BACKLOG


async def _fill(broker_url: str, messages: int, body_bytes: int) -> Run:
    """``messages`` sent in batches of 100, 16 in flight (each acknowledged as the broker's ack mode says)."""
    url = f"{broker_url}/v1/topics/{CONSUME_TOPIC}/messages"
    batch = payloads.send(100, body_bytes)
    async with http_session(16) as session:
        async def op() -> int:
            await post(session, url, batch)
            return 100
        return await drive(lambda _i: op, 16, 3600.0, -(-messages // 100))


def _consume_once(ctx: Context, label: str, broker_url: str, servers: Mapping[str, HasPid]) -> tuple[Callable[[int, float], Run], Run]:
    """A backlog sent first (that fill's run is returned), then each measured run drains it with a new group:
    ``CONSUMERS`` loops of receive + ack."""
    s = ctx.settings
    probe.create_topic(broker_url, CONSUME_TOPIC, QUEUES)
    filled = run_async(_fill(broker_url, _backlog(ctx), s.body_bytes))
    if filled.errors:
        raise RuntimeError(f"{label}: {filled.errors} batch sends failed while filling: {filled.extra.get('first_error')}")
    ctx.note(f"replicated {label}: {filled.items:,} messages sent at {filled.items_per_s:,.0f}/s")

    def drained(seconds: float) -> Run:
        return run_async(drain(broker_url, CONSUME_TOPIC, group_prefix=f"bench_{label}", workers=CONSUMERS, batch=s.receive_batch,
                               backlog=filled.items, seconds=seconds, max_ops=s.max_ops, warmup=0.0))

    def once(_i: int, warmup: float) -> Run:
        if warmup > 0:
            drained(warmup)
        return _with_cpu(servers, lambda: drained(s.seconds))
    return once, filled


def _acknowledged(url: str) -> bool:
    try:
        answer = httpx.post(f"{url}/v1/topics/{TOPIC}/messages", json={"messages": [{"body": "failover"}]}, timeout=2)
    except httpx.HTTPError:
        return False
    return answer.status_code == 200 and answer.json()["results"][0]["status"] == "SEND_OK"


def _failovers(ctx: Context, broker_set: BrokerSet, name: str, times: int,
               fault: Callable[[BrokerServer], None], heal: Callable[[BrokerServer], None]) -> list[dict[str, Any]]:
    """``times`` faults of the leader: each time from the fault until another node acknowledges a quorum send."""
    nodes = broker_set.nodes
    failovers: list[dict[str, Any]] = []
    for i in range(times):
        leader = broker_set.leader()
        time.sleep(0.5)  # every follower fetching again after the last failover
        faulted = time.monotonic()
        fault(nodes[leader])
        try:
            new = broker_set.leader(not_=leader)
            while not _acknowledged(nodes[new].url):
                time.sleep(0.02)
            seconds = time.monotonic() - faulted
        finally:
            heal(nodes[leader])
        failovers.append({"seconds": round(seconds, 3), "faulted": leader, "new_leader": new,
                          "phases": _phases(nodes[new].url)})
        ctx.note(f"replicated {name} {i + 1}/{times}: {leader} down, {new} acknowledging after {seconds:.2f} s")
        broker_set.leader()
        broker_set.all_in_sync()
    return failovers


def _phases(url: str) -> dict[str, float] | None:
    """The new leader's own account of the failover (``last_failover.phases`` in /v1/cluster), if it has it yet."""
    try:
        last = httpx.get(f"{url}/v1/cluster", timeout=2).json().get("last_failover") or {}
    except (httpx.HTTPError, ValueError):
        return None
    phases: dict[str, float] | None = last.get("phases")
    return phases


def _kill9(node: BrokerServer) -> None:
    node.kill9()


def _restart(node: BrokerServer) -> None:
    node.start(timeout=60)


def _signal(sig: signal.Signals) -> Callable[[BrokerServer], None]:
    def send(node: BrokerServer) -> None:
        if node.pid is not None:
            os.kill(node.pid, sig)  # a child this scenario started, by its pid
    return send


@contextmanager
def _elections(ctx: Context, broker_set: BrokerSet, case: dict[str, Any]) -> Iterator[None]:
    """Counts the set's term changes while the block runs, into ``case`` (``elections`` must stay 0)."""
    started = time.monotonic()
    with broker_set.terms_seen() as terms:
        yield
    elections = max(0, len(terms) - 1)
    case.update(elections=elections, terms=sorted(terms), elections_observed_s=round(time.monotonic() - started, 1))
    ctx.note(f"replicated elections under load: {elections} in {time.monotonic() - started:.0f} s")


def _soak_case(ctx: Context, broker_set: BrokerSet) -> dict[str, Any]:
    """One run of quorum sends, ``soak_seconds`` long, and the elections during it."""
    s = ctx.settings
    url = f"{broker_set.leader_url()}/v1/topics/{TOPIC}/messages"
    case: dict[str, Any] = {}
    with _elections(ctx, broker_set, case):
        run = _with_cpu(broker_set.nodes, lambda: _measure(url, payloads.send(1, s.body_bytes), s.concurrency, s.soak_seconds, 1 << 62, 0.0))
    ctx.note(f"replicated quorum_soak_c64: {run.items_per_s:,.0f}/s over {run.seconds:.0f} s, {run.errors} errors")
    return {**throughput_case([run], unit="msg/s", concurrency=s.concurrency, cpu_ms_per_msg=_cpu_per_msg([run]), what=(
        f"soak: leader of a {NODES}-node set, ack=quorum, {s.concurrency} in flight for {s.soak_seconds:g} s")), **case}


class _Cases:
    """The cases this run measures (``--cases``, or all) and where they go."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.out = ctx.cases()
        self.only = set(ctx.settings.cases)

    def wants(self, *names: str) -> bool:
        if "quorum_soak_c64" in names and not self.ctx.settings.soak_seconds:
            names = tuple(n for n in names if n != "quorum_soak_c64")
        return any(not self.only or name in self.only for name in names)

    def measure(self, name: str, measure: Callable[[], dict[str, Any]]) -> None:
        if self.wants(name):
            self.out[name] = measure()


def _alternated(ctx: Context, onces: dict[str, Callable[[int, float], Run]]) -> dict[str, list[Run]]:
    runs = ctx.alternate({f"replicated {name}": once for name, once in onces.items()})
    return {name: runs[f"replicated {name}"] for name in onces}


def _sends(ctx: Context, cases: _Cases, single: BrokerServer | None, quorum_set: BrokerSet | None) -> None:
    """single_c64, quorum_c64 and leader_c64 in turn; the quorum set's elections counted meanwhile."""
    s = ctx.settings
    onces: dict[str, Callable[[int, float], Run]] = {}
    whats = {"single_c64": "one broker", "quorum_c64": f"leader of a {NODES}-node set, ack=quorum",
             "leader_c64": f"leader of a {NODES}-node set, ack=leader"}
    with ExitStack() as stack:
        if single is not None and cases.wants("single_c64"):
            onces["single_c64"] = _send_once(ctx, single.url, {"broker": single})
        elections: dict[str, Any] = {}
        if quorum_set is not None and cases.wants("quorum_c64"):
            onces["quorum_c64"] = _send_once(ctx, quorum_set.leader_url(), quorum_set.nodes)
            stack.enter_context(_elections(ctx, quorum_set, elections))
        if cases.wants("leader_c64"):
            leader_set = stack.enter_context(BrokerSet(ctx, "replicated_leader", ack="leader"))
            onces["leader_c64"] = _send_once(ctx, leader_set.leader_url(), leader_set.nodes)
        runs = _alternated(ctx, onces)
    for name, measured in runs.items():
        cases.out[name] = throughput_case(measured, unit="msg/s", concurrency=s.concurrency, cpu_ms_per_msg=_cpu_per_msg(measured),
                                          what=f"{whats[name]}: durable single-message send, {s.concurrency} in flight")
    if "quorum_c64" in cases.out:
        cases.out["quorum_c64"].update(elections)


def _sdk_sends(ctx: Context, cases: _Cases, single: BrokerServer | None, quorum_set: BrokerSet | None) -> None:
    """sdk_single_cN and sdk_set_cN in turn, N callers of the SDK's send: one broker, and the set through all its URLs."""
    for callers in SDK_CALLERS:
        onces: dict[str, Callable[[int, float], Run]] = {}
        if single is not None and cases.wants(f"sdk_single_c{callers}"):
            onces[f"sdk_single_c{callers}"] = _sdk_send_once(ctx, single.url, {"broker": single}, callers)
        if quorum_set is not None and cases.wants(f"sdk_set_c{callers}"):
            onces[f"sdk_set_c{callers}"] = _sdk_send_once(ctx, quorum_set.urls, quorum_set.nodes, callers)
        for name, measured in _alternated(ctx, onces).items():
            where = "one broker" if name.startswith("sdk_single") else f"a {NODES}-node set, ack=quorum, given every node's URL"
            cases.out[name] = throughput_case(measured, unit="msg/s", concurrency=callers, cpu_ms_per_msg=_cpu_per_msg(measured),
                                              what=f"{where}: the SDK's AsyncProducer.send, {callers} callers (numbered, coalesced)")


def _failover_cases(ctx: Context, cases: _Cases, quorum_set: BrokerSet) -> None:
    s = ctx.settings
    kills = s.runs if s.quick else max(KILLS, s.runs)
    cases.measure("failover", lambda: timed_case(_failovers(ctx, quorum_set, "failover", kills, _kill9, _restart), what=(
        f"kill -9 of the leader → another node answers a quorum send SEND_OK (lease TTL {LEASE_TTL} s, {kills} kills)")))
    cases.measure("failover_sigstop", lambda: timed_case(_failovers(
        ctx, quorum_set, "failover_sigstop", kills, _signal(signal.SIGSTOP), _signal(signal.SIGCONT)), what=(
        f"SIGSTOP of the leader → another node answers a quorum send SEND_OK (lease TTL {LEASE_TTL} s, {kills} times)")))


def _consumption(ctx: Context, cases: _Cases, single: BrokerServer | None, quorum_set: BrokerSet | None) -> None:
    """single_consume_ack_c64 and consume_ack_c64 in turn, each from its own backlog."""
    s = ctx.settings
    onces: dict[str, Callable[[int, float], Run]] = {}
    fills: dict[str, Run] = {}
    whats = {"single_consume_ack_c64": "one broker", "consume_ack_c64": f"leader of a {NODES}-node set, ack=quorum"}
    if single is not None and cases.wants("single_consume_ack_c64"):
        onces["single_consume_ack_c64"], fills["single_consume_ack_c64"] = _consume_once(
            ctx, "single_consume_ack_c64", single.url, {"broker": single})
    if quorum_set is not None and cases.wants("consume_ack_c64"):
        onces["consume_ack_c64"], fills["consume_ack_c64"] = _consume_once(
            ctx, "consume_ack_c64", quorum_set.leader_url(), quorum_set.nodes)
    for name, measured in _alternated(ctx, onces).items():
        backlog = fills[name].items
        cases.out[name] = throughput_case(
            measured, unit="msg/s", concurrency=CONSUMERS, what=f"{whats[name]}: receive {s.receive_batch} + ack, {CONSUMERS} consumers (messages/s)",
            backlog=backlog, fill_per_s=round(fills[name].items_per_s, 1), cpu_ms_per_msg=_cpu_per_msg(measured),
            drained_backlog_runs=sum(1 for r in measured if r.items >= backlog))


def _orders(ctx: Context, cases: _Cases, single: BrokerServer | None, quorum_set: BrokerSet | None,
            postgres: PostgresCluster | None) -> None:
    """Per database, orders through one broker and through the set in turn (each with its own two services)."""
    for on_one, on_set, database, pg in (("orders_c64", "orders_set_c64", SQLITE, None),
                                         ("orders_c64_pg", "orders_set_c64_pg", POSTGRES, postgres)):
        if database == POSTGRES and pg is None:
            continue
        whats = {on_one: f"{database}; one broker", on_set: f"{database}; a {NODES}-node set, ack=quorum"}
        with ExitStack() as stack:
            onces: dict[str, Callable[[int, float], Run]] = {}
            if single is not None and cases.wants(on_one):
                onces[on_one] = stack.enter_context(orders_runs(ctx, on_one, single.url, {"broker": single}, pg))
            if quorum_set is not None and cases.wants(on_set):
                onces[on_set] = stack.enter_context(orders_runs(ctx, on_set, quorum_set.urls, quorum_set.nodes, pg))
            runs = _alternated(ctx, onces)
        for name, measured in runs.items():
            cases.out[name] = orders_summary(ctx, measured, whats[name])


def _with_ratios(cases: dict[str, dict[str, Any]]) -> None:
    for one, on_set in PAIRS:
        if one in cases and on_set in cases and cases[one]["ops_per_s"]["median"]:
            cases[on_set]["ratio_to_single"] = round(cases[on_set]["ops_per_s"]["median"] / cases[one]["ops_per_s"]["median"], 2)


ON_ONE_BROKER = ("single_c64", "single_consume_ack_c64", "orders_c64", "orders_c64_pg", *(f"sdk_single_c{c}" for c in SDK_CALLERS))
ON_THE_SET = ("quorum_c64", "quorum_soak_c64", "failover", "failover_sigstop", "consume_ack_c64", "orders_set_c64", "orders_set_c64_pg",
              *(f"sdk_set_c{c}" for c in SDK_CALLERS))


def run(ctx: Context) -> dict[str, Any]:
    if shutil.which("etcd") is None:
        return scenario_unavailable("etcd is not installed (bin/setup installs Debian's etcd-server)")
    cases = _Cases(ctx)
    with ExitStack() as stack:
        single: BrokerServer | None = None
        quorum_set: BrokerSet | None = None
        postgres: PostgresCluster | None = None
        if cases.wants(*ON_ONE_BROKER):
            single = BrokerServer(ctx.dir("replicated", "single"), ctx.logs)
            stack.enter_context(single)
            single.start()
        if cases.wants(*ON_THE_SET):
            quorum_set = stack.enter_context(BrokerSet(ctx, "replicated_quorum"))
        if cases.wants("orders_c64_pg", "orders_set_c64_pg"):
            postgres = PostgresCluster().start(durable=True)
            stack.callback(postgres.stop)
        _sends(ctx, cases, single, quorum_set)
        _sdk_sends(ctx, cases, single, quorum_set)
        if quorum_set is not None and cases.wants("quorum_soak_c64"):
            probe.create_topic(quorum_set.leader_url(), TOPIC, QUEUES)
            cases.out["quorum_soak_c64"] = _soak_case(ctx, quorum_set)
        if quorum_set is not None:
            _failover_cases(ctx, cases, quorum_set)
        _consumption(ctx, cases, single, quorum_set)
        _orders(ctx, cases, single, quorum_set, postgres)
    _with_ratios(cases.out)
    return scenario_ok(cases.out, nodes=NODES, lease_ttl_s=LEASE_TTL, ack="quorum (leader_c64: leader)", body_bytes=ctx.settings.body_bytes,
                       consumers=CONSUMERS, orders_users=50, order=(
                           "started together: one broker, the quorum set (and PostgreSQL); the sends in turn (the ack=leader set "
                           "only for them), the soak, the failovers, then consumption and orders, one broker and the set in turn"))
