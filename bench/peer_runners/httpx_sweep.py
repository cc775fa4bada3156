#!/usr/bin/env python3
# Source: /work/shared/bench/peers/httpx_sweep.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""httpx.AsyncClient concurrency sweep against the trivial FastAPI app (1 uvicorn worker).
Shows where httpx's connection pool stops scaling (encode/httpx#3215). One JSON line.
Usage: /tmp/halfmq-peers/bin/python httpx_sweep.py [--seconds 4]"""
import argparse
import asyncio
import json

from http_bench import aiohttp_load, httpx_load, start_server, stop_server

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=4)
ap.add_argument("--port", type=int, default=18082)
a = ap.parse_args()
url = f"http://127.0.0.1:{a.port}/msg"
p = start_server(a.port, 1)
out = {"bench": "httpx_concurrency_sweep", "seconds": a.seconds}
try:
    for conc in (1, 2, 4, 8, 16, 32, 64):
        r = asyncio.run(httpx_load(url, conc, a.seconds, 100000, "pool64"))
        out[f"httpx_c{conc}"] = {"rps": round(r["rps"]), "p50_ms": round(r["p50_ms"], 2), "p99_ms": round(r["p99_ms"], 2)}
    for conc in (1, 8, 64):
        r = asyncio.run(aiohttp_load(url, conc, a.seconds, 100000))
        out[f"aiohttp_c{conc}"] = {"rps": round(r["rps"]), "p50_ms": round(r["p50_ms"], 2), "p99_ms": round(r["p99_ms"], 2)}
finally:
    stop_server(p)
print(json.dumps(out))
