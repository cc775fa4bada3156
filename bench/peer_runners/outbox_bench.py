#!/usr/bin/env python3
# Source: /work/shared/bench/peers/outbox_bench.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""Transactional outbox baseline: one transaction = INSERT order row + INSERT outbox row.

PostgreSQL 15: initdb a throwaway cluster under /tmp/pgbench15 (as user postgres), port 5433,
listen 127.0.0.1 only, default settings otherwise (fsync on, wal_sync_method default).
asyncpg pool of 32, 32 concurrent clients, plus 1 client; with synchronous_commit on and off.
SQLite (stdlib sqlite3): one process, one connection, WAL + synchronous=FULL (and NORMAL
for contrast), BEGIN IMMEDIATE; 2 inserts; COMMIT.
Each case --reps times, bounded by --seconds and --max-tx. Cluster stopped with pg_ctl at the end.
Usage: /tmp/halfmq-peers/bin/python outbox_bench.py [--seconds 15] [--reps 3]
"""
import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import subprocess
import time

from _load import PAYLOAD, run_load, summarize

PGDATA = "/tmp/pgbench15"
PORT = 5433
DDL = [
    "DROP TABLE IF EXISTS orders, outbox",
    """CREATE TABLE orders (id BIGSERIAL PRIMARY KEY, user_id BIGINT NOT NULL, amount_cents BIGINT NOT NULL,
       status TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())""",
    """CREATE TABLE outbox (id BIGSERIAL PRIMARY KEY, aggregate_id BIGINT NOT NULL, topic TEXT NOT NULL,
       payload BYTEA NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now(), sent_at TIMESTAMPTZ)""",
]


def as_pg(cmd):
    return subprocess.run(["su", "postgres", "-s", "/bin/sh", "-c", cmd], capture_output=True, text=True)


def pg_start():
    shutil.rmtree(PGDATA, ignore_errors=True)
    r = as_pg(f"initdb -D {PGDATA} -U postgres --auth=trust -E UTF8 >/dev/null")
    assert r.returncode == 0, r.stderr
    with open(f"{PGDATA}/postgresql.conf", "a") as f:
        f.write(f"\nlisten_addresses = '127.0.0.1'\nport = {PORT}\nunix_socket_directories = '/tmp'\n"
                "max_connections = 100\nshared_buffers = 256MB\n")
    r = as_pg(f"pg_ctl -D {PGDATA} -l {PGDATA}/log.txt -w start")
    assert r.returncode == 0, r.stderr + r.stdout


def pg_stop():
    as_pg(f"pg_ctl -D {PGDATA} -m fast -w stop")
    shutil.rmtree(PGDATA, ignore_errors=True)


async def pg_bench(a):
    import asyncpg
    dsn = f"postgresql://postgres@127.0.0.1:{PORT}/postgres"
    c = await asyncpg.connect(dsn)
    for s in DDL:
        await c.execute(s)
    ver = await c.fetchval("SHOW server_version")
    settings = {k: await c.fetchval(f"SHOW {k}") for k in ("fsync", "wal_sync_method", "synchronous_commit", "full_page_writes")}
    await c.close()
    res = {}
    for sc in ("on", "off"):
        pool = await asyncpg.create_pool(dsn, min_size=32, max_size=32,
                                         server_settings={"synchronous_commit": sc})
        for conc in (32, 1):
            runs = []
            for _ in range(a.reps):
                async def tx():
                    async with pool.acquire() as con:
                        async with con.transaction():
                            oid = await con.fetchval(
                                "INSERT INTO orders(user_id, amount_cents, status) VALUES($1,$2,'PENDING') RETURNING id",
                                42, 1999)
                            await con.execute("INSERT INTO outbox(aggregate_id, topic, payload) VALUES($1,$2,$3)",
                                              oid, "order.created", PAYLOAD)
                runs.append(await run_load(tx, conc, a.seconds, a.max_tx))
            res[f"pg_sync_commit_{sc}_c{conc}"] = summarize(runs)
        await pool.close()
    return res, ver, settings


def sqlite_bench(a, sync):
    path = "/tmp/outbox_bench.sqlite"
    runs = []
    for _ in range(a.reps):
        for suf in ("", "-wal", "-shm"):
            if os.path.exists(path + suf):
                os.unlink(path + suf)
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(f"PRAGMA synchronous={sync}")
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, amount_cents INTEGER, status TEXT, created_at TEXT DEFAULT CURRENT_TIMESTAMP)")
        con.execute("CREATE TABLE outbox (id INTEGER PRIMARY KEY, aggregate_id INTEGER, topic TEXT, payload BLOB, created_at TEXT DEFAULT CURRENT_TIMESTAMP, sent_at TEXT)")
        lat = []
        t0 = time.perf_counter()
        deadline = t0 + a.seconds
        n = 0
        while n < a.max_tx and time.perf_counter() < deadline:
            t = time.perf_counter()
            con.execute("BEGIN IMMEDIATE")
            cur = con.execute("INSERT INTO orders(user_id, amount_cents, status) VALUES(?,?,'PENDING')", (42, 1999))
            con.execute("INSERT INTO outbox(aggregate_id, topic, payload) VALUES(?,?,?)", (cur.lastrowid, "order.created", PAYLOAD))
            con.execute("COMMIT")
            lat.append(time.perf_counter() - t)
            n += 1
        dt = time.perf_counter() - t0
        con.close()
        lat.sort()
        runs.append({"n": n, "secs": round(dt, 2), "rps": n / dt, "p50_ms": lat[n // 2] * 1e3,
                     "p99_ms": lat[int(n * 0.99)] * 1e3})
    for suf in ("", "-wal", "-shm"):
        if os.path.exists(path + suf):
            os.unlink(path + suf)
    return summarize(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-tx", type=int, default=2_000_000)
    a = ap.parse_args()
    pg_start()
    try:
        pg, ver, settings = asyncio.run(pg_bench(a))
    finally:
        pg_stop()
    out = {"bench": "outbox_tx_order_plus_outbox_row", "unit": "transactions/s", "postgres": ver,
           "pg_settings": settings, "sqlite": sqlite3.sqlite_version, **pg}
    out["sqlite_wal_sync_full"] = sqlite_bench(a, "FULL")
    out["sqlite_wal_sync_normal"] = sqlite_bench(a, "NORMAL")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
