"""In-run baselines: the same machine, the same run, the same driver, no broker.

* ``fsync_each`` / ``fsync_group64`` - a raw loop appending 256-byte records
  to a file with one fsync per record, or one per 64 (the peers'
  ``fsync_bench.py``): the disk's ceiling for durable appends.
* ``fastapi_c1`` / ``fastapi_c64`` - a trivial FastAPI POST on uvicorn +
  uvloop + httptools, one worker: the HTTP stack's ceiling.
* ``fastapi_fsync_c1`` / ``fastapi_fsync_c64`` - the same endpoint appending
  and fsyncing inline (the peers' ``http_append_bench.py``): the naive
  durable HTTP endpoint a broker has to beat.

HTTP baselines are driven by exactly the driver that drives the halfmq case
they are compared with (``_wrk`` suffix when that is wrk), so a ratio never
mixes two drivers' overheads.
"""

from __future__ import annotations

import os
import time
from typing import Any

from .context import Context
from .load import Run, drive, http_session, percentile, post, run_async, wrk_run
from .payloads import PEER_PAYLOAD
from .results import throughput_case
from .servers import BaselineApp

RECORD = b"x" * 255 + b"\n"  # 256 bytes, as fsync_bench.py

FSYNC = {"fsync_each": 1, "fsync_group64": 64}
HTTP = {  # name -> (path, concurrency)
    "fastapi_c1": ("/msg", 1),
    "fastapi_c64": ("/msg", 64),
    "fastapi_fsync_c1": ("/append_fsync", 1),
    "fastapi_fsync_c64": ("/append_fsync", 64),
}
WHAT = {
    "fsync_each": "raw append of 256-byte records, fsync per record (in-process loop)",
    "fsync_group64": "raw append of 256-byte records, one fsync per 64 records (in-process loop)",
    "fastapi_c1": "trivial FastAPI POST (pydantic), 1 in flight",
    "fastapi_c64": "trivial FastAPI POST (pydantic), 64 in flight",
    "fastapi_fsync_c1": "FastAPI POST with inline append + os.fsync, 1 in flight",
    "fastapi_fsync_c64": "FastAPI POST with inline append + os.fsync, 64 in flight",
}


def name_for(base: str, driver: str) -> str:
    """The baseline a case driven by ``driver`` compares with (fsync loops have no driver)."""
    return f"{base}_wrk" if driver == "wrk" and base in HTTP else base


def fsync_loop(path: str, group: int, seconds: float, max_records: int) -> Run:
    """Append + fsync every ``group`` records until ``seconds`` or ``max_records``; latency per fsync group."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    lat: list[float] = []
    n = 0
    clock = time.perf_counter
    try:
        t0 = clock()
        deadline = t0 + seconds
        while n < max_records:
            t = clock()
            for _ in range(group):
                os.write(fd, RECORD)
            os.fsync(fd)
            lat.append(clock() - t)
            n += group
            if clock() >= deadline:
                break
        elapsed = clock() - t0
    finally:
        os.close(fd)
        os.unlink(path)
    lat.sort()
    p50, p99 = percentile(lat, 0.5), percentile(lat, 0.99)
    return Run(len(lat), n, 0, 0, elapsed, p50 * 1e3 if p50 else None, p99 * 1e3 if p99 else None, "in-process")


async def _http(url: str, concurrency: int, seconds: float, max_ops: int, warmup: float) -> Run:
    async with http_session(concurrency) as session:
        async def op() -> int:
            await post(session, url, PEER_PAYLOAD)
            return 1

        return await drive(lambda _i: op, concurrency, seconds, max_ops, warmup=warmup)


def measure(ctx: Context, names: list[str]) -> dict[str, Any]:
    """Measure the named baselines (see module doc); unknown names are ignored."""
    s = ctx.settings
    out: dict[str, Any] = {}
    for name in names:
        if name in FSYNC:
            path = str(ctx.dir("fsync") / "append.log")
            runs = ctx.repeat(f"baseline {name}", lambda _i, _w, g=FSYNC[name], path=path: fsync_loop(path, g, s.fsync_seconds, 5_000_000))
            out[name] = throughput_case(runs, unit="records/s", concurrency=1, what=WHAT[name])
    http_names = [n for n in names if n.removesuffix("_wrk") in HTTP]
    if not http_names:
        return out
    app = BaselineApp(ctx.logs, ctx.dir("baseline-app") / "append.log")
    with app:
        app.start()
        for name in http_names:
            base = name.removesuffix("_wrk")
            path, conc = HTTP[base]
            url = app.url + path
            if name.endswith("_wrk"):
                runs = ctx.repeat(f"baseline {name}", lambda _i, w, url=url, conc=conc: wrk_run(url, PEER_PAYLOAD, conc, s.seconds, warmup=w))
            else:
                runs = ctx.repeat(f"baseline {name}", lambda _i, w, url=url, conc=conc: run_async(_http(url, conc, s.seconds, s.max_ops, w)))
            out[name] = throughput_case(runs, unit="req/s", concurrency=conc, what=WHAT[base])
    return out
