#!/usr/bin/env python3
# Source: /work/shared/bench/peers/http_bench.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""HTTP framework ceiling: FastAPI + uvicorn (uvloop/httptools), POST 256-byte JSON.

For workers in (1, 2): start uvicorn on 127.0.0.1, drive it with
 (a) httpx.AsyncClient, 64 concurrent requests with a 64-connection pool, with
     httpx's default Limits, and sequentially (bounded: --seconds and --max-req)
 (a') aiohttp.ClientSession, 64 concurrent requests (contrast)
 (b) wrk -t1 -c64 with post.lua (bounded by -d)
Client and server share the same 2 cores.
Each measured --reps times. Prints one JSON line. Servers are stopped by PID.
Usage: /tmp/halfmq-peers/bin/python http_bench.py [--seconds 10] [--reps 3]
"""
import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BODY = b'{"topic":"orders","key":"k-000001","body":"' + b"x" * 211 + b'"}'
assert len(BODY) == 256
HEADERS = {"content-type": "application/json"}


def start_server(port, workers):
    cmd = [sys.executable, "-m", "uvicorn", "http_app:app", "--host", "127.0.0.1",
           "--port", str(port), "--workers", str(workers), "--loop", "uvloop",
           "--http", "httptools", "--no-access-log", "--log-level", "warning"]
    p = subprocess.Popen(cmd, cwd=HERE, start_new_session=True)
    import httpx
    for _ in range(200):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=0.5).status_code == 200:
                time.sleep(0.5)
                return p
        except Exception:
            pass
        time.sleep(0.1)
    stop_server(p)
    raise RuntimeError("server did not start")


def stop_server(p):
    try:
        os.killpg(p.pid, signal.SIGTERM)  # its own session: uvicorn master + its workers only
    except ProcessLookupError:
        pass
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()


async def httpx_load(url, conc, seconds, max_req, limits="pool64"):
    """limits='pool64': 64 pooled keep-alive connections (Limits(64, 64));
    'default': httpx default Limits (100 max, 20 keep-alive)."""
    import httpx
    lim = (httpx.Limits(max_connections=conc, max_keepalive_connections=conc)
           if limits == "pool64" else httpx.Limits())
    async with httpx.AsyncClient(limits=lim, timeout=10) as c:
        async def one():
            r = await c.post(url, content=BODY, headers=HEADERS)
            return r.status_code
        return await _measured(one, conc, seconds, max_req)


async def aiohttp_load(url, conc, seconds, max_req):
    import aiohttp
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=conc)) as c:
        async def one():
            async with c.post(url, data=BODY, headers=HEADERS) as r:
                await r.read()
                return r.status
        return await _measured(one, conc, seconds, max_req)


async def _measured(post_one, conc, seconds, max_req):
    """One warm-up round of ``conc`` posts, then ``conc`` workers posting until ``seconds`` or ``max_req``: the same
    loop for every HTTP client, so their figures differ by the client alone. A non-200 answer counts as an error."""
    lat = []
    errors = 0
    count = 0
    deadline = time.perf_counter() + seconds  # the warm-up counts against ``seconds``
    await asyncio.gather(*[post_one() for _ in range(conc)])

    async def worker():
        nonlocal errors, count
        while count < max_req and time.perf_counter() < deadline:
            count += 1
            t = time.perf_counter()
            status = await post_one()
            lat.append(time.perf_counter() - t)
            if status != 200:
                errors += 1
    t0 = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(conc)])
    dt = time.perf_counter() - t0
    lat.sort()
    return {"rps": len(lat) / dt, "p50_ms": lat[len(lat) // 2] * 1e3,
            "p99_ms": lat[int(len(lat) * 0.99)] * 1e3, "n": len(lat), "errors": errors}


def parse_ms(s):
    m = re.match(r"([\d.]+)(us|ms|s)", s)
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u == "us" else v if u == "ms" else v * 1000


def wrk_load(url, conc, seconds):
    out = subprocess.run(["wrk", "-t1", f"-c{conc}", f"-d{int(seconds)}s", "--latency",
                          "-s", os.path.join(HERE, "post.lua"), url],
                         capture_output=True, text=True, timeout=seconds + 30).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = parse_ms(re.search(r"\s50%\s+(\S+)", out).group(1))
    p99 = parse_ms(re.search(r"\s99%\s+(\S+)", out).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rps": rps, "p50_ms": p50, "p99_ms": p99, "non2xx": int(non2xx.group(1)) if non2xx else 0}


def summarize(runs):
    def med(k):
        return round(statistics.median(r[k] for r in runs), 2)
    return {"rps_median": med("rps"), "rps_min": round(min(r["rps"] for r in runs), 1),
            "rps_max": round(max(r["rps"] for r in runs), 1),
            "p50_ms_median": med("p50_ms"), "p99_ms_median": med("p99_ms"),
            "runs": [{k: round(v, 2) if isinstance(v, float) else v for k, v in r.items()} for r in runs]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--conc", type=int, default=64)
    ap.add_argument("--max-req", type=int, default=200_000)
    ap.add_argument("--port", type=int, default=18080)
    a = ap.parse_args()
    url = f"http://127.0.0.1:{a.port}/msg"
    res = {"bench": "fastapi_uvicorn_post256", "conc": a.conc, "seconds": a.seconds}
    for workers in (1, 2):
        p = start_server(a.port, workers)
        try:
            r = {}
            r["httpx_c64_pool64"] = summarize([asyncio.run(httpx_load(url, a.conc, a.seconds, a.max_req, "pool64")) for _ in range(a.reps)])
            r["httpx_c64_defaultlimits"] = summarize([asyncio.run(httpx_load(url, a.conc, a.seconds, a.max_req, "default")) for _ in range(a.reps)])
            r["httpx_sequential"] = summarize([asyncio.run(httpx_load(url, 1, a.seconds, a.max_req, "default")) for _ in range(a.reps)])
            r["aiohttp_c64"] = summarize([asyncio.run(aiohttp_load(url, a.conc, a.seconds, a.max_req)) for _ in range(a.reps)])
            r["wrk_t1_c64"] = summarize([wrk_load(url, a.conc, a.seconds) for _ in range(a.reps)])
        finally:
            stop_server(p)
        res[f"workers{workers}"] = r
    print(json.dumps(res))


if __name__ == "__main__":
    main()
