# Source: /work/shared/bench/peers/_load.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""Shared bounded async load loop: `conc` coroutines call `op()` until `seconds`
elapse or `max_n` operations were started. Returns rps and latency percentiles."""
import asyncio
import statistics
import time


async def run_load(op, conc, seconds, max_n):
    lat = []
    started = 0
    errors = 0
    deadline = time.perf_counter() + seconds

    async def worker():
        nonlocal started, errors
        while started < max_n and time.perf_counter() < deadline:
            started += 1
            t = time.perf_counter()
            try:
                await op()
            except Exception:
                errors += 1
                continue
            lat.append(time.perf_counter() - t)

    t0 = time.perf_counter()
    await asyncio.gather(*[worker() for _ in range(conc)])
    dt = time.perf_counter() - t0
    lat.sort()
    n = len(lat)
    return {"n": n, "errors": errors, "secs": round(dt, 2), "rps": n / dt,
            "p50_ms": lat[n // 2] * 1e3 if n else None,
            "p99_ms": lat[min(n - 1, int(n * 0.99))] * 1e3 if n else None}


def summarize(runs, key="rps"):
    vals = [r[key] for r in runs]
    out = {f"{key}_median": round(statistics.median(vals), 1),
           f"{key}_min": round(min(vals), 1), f"{key}_max": round(max(vals), 1)}
    if "p50_ms" in runs[0] and runs[0]["p50_ms"] is not None:
        out["p50_ms_median"] = round(statistics.median(r["p50_ms"] for r in runs), 3)
        out["p99_ms_median"] = round(statistics.median(r["p99_ms"] for r in runs), 3)
    out["runs"] = [{k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()} for r in runs]
    return out


PAYLOAD = b'{"topic":"orders","key":"k-000001","body":"' + b"x" * 211 + b'"}'
assert len(PAYLOAD) == 256
