#!/usr/bin/env python3
# Source: /work/shared/bench/peers/redis_bench.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""Redis Streams XADD durability with appendonly yes + appendfsync always, redis-py asyncio.

Starts its own redis-server on 127.0.0.1:16379 (data under /tmp/redisbench, no RDB).
Per rep (bounded by --seconds / --max-msgs): XADD sequentially, XADD with 64 in flight
(connection pool of 64), then drain with XREADGROUP COUNT 256 + XACK per batch.
Server stopped by PID at the end.
Usage: /tmp/halfmq-peers/bin/python redis_bench.py [--seconds 20] [--reps 3] [--fsync always|everysec]
"""
import argparse
import asyncio
import json
import os
import shutil
import subprocess
import time

from _load import PAYLOAD, run_load, summarize

PORT = 16379
DIR = "/tmp/redisbench"


async def bench(a):
    import redis.asyncio as redis
    r = redis.Redis(host="127.0.0.1", port=PORT, max_connections=80)
    for _ in range(50):
        try:
            await r.ping()
            break
        except Exception:
            await asyncio.sleep(0.1)
    res = {"xadd_seq": [], "xadd_c64": [], "consume_group": []}
    for rep in range(a.reps):
        await r.delete("bench")

        async def xadd():
            await r.xadd("bench", {"d": PAYLOAD})
        res["xadd_seq"].append(await run_load(xadd, 1, a.seconds, a.max_msgs))
        res["xadd_c64"].append(await run_load(xadd, 64, a.seconds, a.max_msgs))
        total = await r.xlen("bench")
        await r.xgroup_create("bench", "g", id="0")
        got = 0
        t0 = time.perf_counter()
        deadline = t0 + a.seconds * 3
        while got < total and time.perf_counter() < deadline:
            resp = await r.xreadgroup("g", "c1", {"bench": ">"}, count=256)
            if not resp:
                continue
            ids = [mid for mid, _ in resp[0][1]]
            await r.xack("bench", "g", *ids)
            got += len(ids)
        dt = time.perf_counter() - t0
        res["consume_group"].append({"n": got, "total": total, "secs": round(dt, 2), "rps": got / dt})
    info = await r.info("server")
    await r.aclose()
    return res, info["redis_version"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-msgs", type=int, default=2_000_000)
    ap.add_argument("--fsync", default="always", choices=["always", "everysec"])
    a = ap.parse_args()
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    p = subprocess.Popen(["redis-server", "--bind", "127.0.0.1", "--port", str(PORT), "--dir", DIR,
                          "--appendonly", "yes", "--appendfsync", a.fsync, "--save", "",
                          "--protected-mode", "yes", "--logfile", f"{DIR}/redis.log"])
    try:
        res, ver = asyncio.run(bench(a))
    finally:
        p.terminate()
        p.wait(20)
        shutil.rmtree(DIR, ignore_errors=True)
    print(json.dumps({"bench": "redis_streams_xadd_256B", "server": "redis " + ver, "appendfsync": a.fsync,
                      "seconds": a.seconds, **{k: summarize(v) for k, v in res.items()}}))


if __name__ == "__main__":
    main()
