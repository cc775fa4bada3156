"""`orders`: the demo end to end - POST /orders at 64 in flight until every order is credited.

Broker, order service and credit service run as three processes (SQLite
files in a temp dir, as `halfmq up` does). Each order goes half message →
local SQLite transaction → end(commit) → ORDER_TOPIC → credit service
receive → credit transaction → ack. A run POSTs for ``seconds`` (or
``orders_max`` orders), then waits until the credit service has credited
every order it accepted.

Two cases: ``orders_c64`` on SQLite files, ``orders_c64_pg`` with both services
on one throwaway PostgreSQL cluster (the tests' ``halfmq.cli.processes.postgres_cluster``,
started durable: fsync and synchronous_commit on), one database each.

Figures: orders/s = credited orders / (last credit's ``created_at`` − first
POST), and the latency from each POST to its credit record's ``created_at``
(read from the credit service's database). Same host, same clock. The POST's
own latency is reported alongside.
"""

from __future__ import annotations

import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from halfmq.cli.credentials import ORDER_TOPIC
from halfmq.cli.processes.postgres_cluster import PostgresCluster
from halfmq.cli.processes.topics import ensure_topics

from .. import payloads
from ..context import Context
from ..cpu import cpu_ms_per_item, cpu_now, medians
from ..load import Run, drive, http_session, percentile, post, run_async
from ..results import scenario_ok, throughput_case
from ..servers import BrokerServer, ServerProcess, ServiceServer

USERS = 50


def baselines(driver: str) -> list[str]:
    return ["fastapi_fsync_c64"]


async def _place(order_url: str, conc: int, seconds: float, max_ops: int, warmup: float, prefix: str,
                 placed: dict[str, float]) -> Run:
    url = f"{order_url}/orders"
    bodies = [payloads.order(f"{prefix}-u{i}") for i in range(USERS)]
    counter = 0
    recording = False

    async with http_session(conc) as session:
        async def op() -> int:
            nonlocal counter
            body = bodies[counter % USERS]
            counter += 1
            sent_at = time.time()
            order = orjson.loads(await post(session, url, body))
            if recording:
                placed[order["order_id"]] = sent_at
            return 1

        if warmup > 0:
            await drive(lambda _i: op, conc, warmup, max_ops)
        recording = True
        return await drive(lambda _i: op, conc, seconds, max_ops)


CreditedAt = Callable[[list[str]], dict[str, float]]


def _epoch(created: str | datetime) -> float:
    ts = datetime.fromisoformat(created) if isinstance(created, str) else created
    return (ts if ts.tzinfo else ts.replace(tzinfo=UTC)).timestamp()


def _sqlite_credited_at(db_path: Path) -> CreditedAt:
    """order id → credit ``created_at`` (epoch seconds) for those already credited, read-only from the SQLite file."""
    def credited_at(order_ids: list[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
        try:
            for i in range(0, len(order_ids), 500):
                chunk = order_ids[i:i + 500]
                rows = con.execute(f"SELECT order_id, created_at FROM credit_records WHERE order_id IN ({','.join('?' * len(chunk))})",
                                   chunk).fetchall()
                out.update((order_id, _epoch(created)) for order_id, created in rows)
        finally:
            con.close()
        return out
    return credited_at


def _postgres_credited_at(url: str) -> CreditedAt:
    """The same, from the credit service's PostgreSQL database (a fresh connection per poll)."""
    def credited_at(order_ids: list[str]) -> dict[str, float]:
        engine = create_engine(url, poolclass=NullPool)
        try:
            with engine.connect() as conn:
                rows = conn.execute(text("SELECT order_id, created_at FROM credit_records WHERE order_id = ANY(:ids)"),
                                    {"ids": order_ids}).all()
        finally:
            engine.dispose()
        return {order_id: _epoch(created) for order_id, created in rows}
    return credited_at


def run(ctx: Context) -> dict[str, Any]:
    cases = ctx.cases()
    cases["orders_c64"] = _orders_case(ctx, "orders", "sqlite (WAL, synchronous=FULL)", postgres=None)
    with ExitStack() as stack:
        cluster = PostgresCluster().start(durable=True)
        stack.callback(cluster.stop)
        cases["orders_c64_pg"] = _orders_case(ctx, "orders_pg", "postgresql (fsync on, synchronous_commit on)", postgres=cluster)
    return scenario_ok(cases, database="sqlite (WAL, synchronous=FULL); postgresql (durable)", users_per_run=USERS)


def _orders_case(ctx: Context, label: str, database: str, postgres: PostgresCluster | None) -> dict[str, Any]:
    broker = BrokerServer(ctx.dir(label, "broker"), ctx.logs)
    with broker:
        broker.start()
        with orders_runs(ctx, label, broker.url, {"broker": broker}, postgres) as once:
            return orders_summary(ctx, ctx.repeat(label, once), database)


@contextmanager
def orders_runs(ctx: Context, label: str, broker_url: str, brokers: Mapping[str, ServerProcess],
                postgres: PostgresCluster | None) -> Iterator[Callable[[int, float], Run]]:
    """The order and credit services started against brokers already running; yields ``once(index, warmup)``, one
    measured run. ``broker_url`` is what the services are given (a set's nodes, comma-separated, or one broker);
    ``brokers`` are the processes whose CPU is counted per order. On PostgreSQL the services get databases named
    after ``label``."""
    s = ctx.settings
    c = s.concurrency
    data = ctx.dir(label)
    order_env: dict[str, str] = {}
    credit_env: dict[str, str] = {}
    if postgres is not None:
        order_env["ORDER_DATABASE_URL"] = postgres.create_database(f"{label}_order")
        credit_env["CREDIT_DATABASE_URL"] = postgres.create_database(f"{label}_credit")
    ctx.note(ensure_topics(broker_url.split(","), [ORDER_TOPIC], None))  # as `halfmq up` does: no first-receive back-off in run 1
    order = ServiceServer("order", data, ctx.logs, broker_url, order_env)
    credit = ServiceServer("credit", data, ctx.logs, broker_url, credit_env)
    with credit, order:
        order.start(timeout=120)
        credit.start(timeout=120)
        credited_at = (_postgres_credited_at(credit_env["CREDIT_DATABASE_URL"]) if postgres is not None
                       else _sqlite_credited_at(credit.database_path))
        servers: dict[str, ServerProcess] = {**brokers, "order": order, "credit": credit}

        def once(i: int, warmup: float) -> Run:
            placed: dict[str, float] = {}
            cpu_before = cpu_now(servers)
            post_run = run_async(_place(order.url, c, s.seconds, s.orders_max, warmup, f"bench{i}", placed))
            ids = list(placed)
            deadline = time.monotonic() + s.orders_credit_wait
            waited = time.monotonic()
            credited: dict[str, float] = {}
            while time.monotonic() < deadline:
                credited = credited_at(ids)
                if len(credited) >= len(ids):
                    break
                time.sleep(0.25)
            waited = time.monotonic() - waited
            cpu_per_order = cpu_ms_per_item(cpu_before, cpu_now(servers), len(credited))
            latencies = sorted(credited[o] - placed[o] for o in credited)
            span = (max(credited.values()) - min(placed.values())) if credited else 0.0
            p50, p99 = percentile(latencies, 0.5), percentile(latencies, 0.99)
            run = Run(len(credited), len(credited), post_run.requests, post_run.errors + (len(ids) - len(credited)),
                      span, p50 * 1e3 if p50 is not None else None, p99 * 1e3 if p99 is not None else None, "aiohttp")
            run.extra.update({
                "orders_posted": len(ids), "orders_credited": len(credited),
                "post_per_s": round(post_run.items_per_s, 1),
                "post_p50_ms": round(post_run.p50_ms, 3) if post_run.p50_ms else None,
                "post_p99_ms": round(post_run.p99_ms, 3) if post_run.p99_ms else None,
                "credit_wait_after_last_post_s": round(waited, 2),
                "cpu_ms_per_order": cpu_per_order,
            })
            if post_run.extra.get("first_error"):
                run.extra["first_error"] = post_run.extra["first_error"]
            return run

        yield once


def orders_summary(ctx: Context, runs: list[Run], database: str) -> dict[str, Any]:
    c = ctx.settings.concurrency
    return throughput_case(
        runs, unit="orders/s", concurrency=c, baseline="fastapi_fsync_c64",
        what=f"POST /orders at {c} in flight until credited (first POST → last credit; latency POST → credit record); {database}",
        post_p99_ms=statistics.median([r.extra["post_p99_ms"] for r in runs if r.extra.get("post_p99_ms")] or [0]),
        cpu_ms_per_order=medians([r.extra.get("cpu_ms_per_order") or {} for r in runs]),
        database=database,
    )
