"""The load driver: bounded, closed-loop request generators and what one measured run yields.

Two drivers, both outside the measured server's process:

* ``drive`` - N worker coroutines, each looping "start timer → await op →
  record latency" until the deadline or the operation budget is spent (the
  peers' ``_load.run_load`` loop, so figures compare). Ops talk HTTP through
  one aiohttp ``ClientSession`` whose connector allows exactly N connections.
  The loop runs on uvloop. httpx is never used to generate load: one
  ``httpx.AsyncClient`` collapses past ~8 requests in flight and would
  measure itself (DESIGN section 7).
* ``wrk_run`` - wrk with one thread for fixed-body POSTs, as the peers' HTTP
  baselines were measured.

Both return a ``Run``: throughput in the case's unit (messages, transactions,
orders: ``items``) and per-operation latency percentiles.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp

T = TypeVar("T")
Op = Callable[[], Awaitable[int]]  # one operation; returns how many items (messages, pairs…) it carried

JSON_HEADERS = {"content-type": "application/json"}


class StopLoad(Exception):
    """Raised by an op when there is nothing left to do (e.g. a drained topic): ends that worker."""


class HttpStatusError(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}: {body[:200]!r}")
        self.status = status


def percentile(sorted_values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of an already sorted list (as the peers compute it)."""
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))]


@dataclass
class Run:
    """One measured run."""

    ops: int
    items: int
    requests: int
    errors: int
    seconds: float
    p50_ms: float | None
    p99_ms: float | None
    driver: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def items_per_s(self) -> float:
        return self.items / self.seconds if self.seconds > 0 else 0.0

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ops_per_s": round(self.items_per_s, 1),
            "requests_per_s": round(self.requests / self.seconds, 1) if self.seconds > 0 else 0.0,
            "p50_ms": _r(self.p50_ms), "p99_ms": _r(self.p99_ms),
            "ops": self.ops, "items": self.items, "requests": self.requests, "errors": self.errors,
            "seconds": round(self.seconds, 3), "driver": self.driver,
        }
        out.update(self.extra)
        return out


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 3)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on a fresh uvloop loop (cheaper per request than the default loop)."""
    try:
        import uvloop

        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            return runner.run(coro)
    except ImportError:  # pragma: no cover - uvloop ships with uvicorn[standard]
        return asyncio.run(coro)


def http_session(concurrency: int, timeout: float = 30.0) -> aiohttp.ClientSession:
    """One session, one pool of exactly ``concurrency`` keep-alive connections."""
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=concurrency, ttl_dns_cache=None)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=timeout))


async def post(session: aiohttp.ClientSession, url: str, data: bytes) -> bytes:
    """POST pre-encoded JSON; the body of a 2xx answer, HttpStatusError otherwise."""
    async with session.post(url, data=data, headers=JSON_HEADERS) as resp:
        body = await resp.read()
        if resp.status >= 300:
            raise HttpStatusError(resp.status, body)
        return body


async def drive(
    op_for_worker: Callable[[int], Op],
    concurrency: int,
    seconds: float,
    max_ops: int,
    *,
    requests_per_op: float = 1.0,
    warmup: float = 0.0,
) -> Run:
    """``concurrency`` workers run their op until ``seconds`` pass or ``max_ops`` ops were started.

    A warm-up of ``warmup`` seconds runs the same ops first and is discarded.
    Failed ops count as errors (no latency recorded) and back off 10 ms so a
    dead server cannot turn the loop into a spin.
    """
    if warmup > 0:
        await _loop(op_for_worker, concurrency, warmup, max_ops)
    return await _loop(op_for_worker, concurrency, seconds, max_ops, requests_per_op)


async def _loop(op_for_worker: Callable[[int], Op], concurrency: int, seconds: float, max_ops: int,
                requests_per_op: float = 1.0) -> Run:
    latencies: list[float] = []
    started = 0
    items = 0
    errors = 0
    first_error: list[str] = []
    clock = time.perf_counter
    deadline = clock() + seconds

    async def worker(i: int) -> None:
        nonlocal started, items, errors
        op = op_for_worker(i)
        while started < max_ops and clock() < deadline:
            started += 1
            t = clock()
            try:
                n = await op()
            except StopLoad:
                return
            except Exception as exc:  # noqa: BLE001 - every failure is a counted error
                errors += 1
                if not first_error:
                    first_error.append(f"{type(exc).__name__}: {exc}"[:300])
                await asyncio.sleep(0.01)
                continue
            latencies.append(clock() - t)
            items += n

    t0 = clock()
    await asyncio.gather(*(worker(i) for i in range(concurrency)))
    elapsed = clock() - t0
    latencies.sort()
    ops = len(latencies)
    run = Run(ops, items, round(ops * requests_per_op), errors, elapsed,
              _ms(percentile(latencies, 0.50)), _ms(percentile(latencies, 0.99)), "aiohttp")
    if first_error:
        run.extra["first_error"] = first_error[0]
    return run


def _ms(v: float | None) -> float | None:
    return None if v is None else v * 1e3


# --- wrk -----------------------------------------------------------------------
def wrk_available() -> bool:
    return shutil.which("wrk") is not None


def wrk_version() -> str | None:
    if not wrk_available():
        return None
    out = subprocess.run(["wrk", "-v"], capture_output=True, text=True)
    first = (out.stdout or out.stderr).strip().splitlines()
    return first[0] if first else "wrk"


def _lua_long_string(body: str) -> str:
    level = 0
    while f"]{'=' * level}]" in body:
        level += 1
    eq = "=" * level
    return f"[{eq}[{body}]{eq}]"


def _wrk_ms(text: str) -> float:
    m = re.match(r"([\d.]+)(us|ms|s|m)$", text)
    if not m:
        raise ValueError(f"cannot read wrk latency {text!r}")
    v, unit = float(m.group(1)), m.group(2)
    return {"us": v / 1000, "ms": v, "s": v * 1000, "m": v * 60_000}[unit]


def wrk_run(url: str, body: bytes, concurrency: int, seconds: float, *, items_per_request: int = 1,
            warmup: float = 0.0) -> Run:
    """wrk -t1 -cN -dS --latency POSTing ``body`` (a 2xx counts; anything else is an error)."""
    script = (
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = {_lua_long_string(body.decode())}\n"
    )
    out = _wrk_script(url, script, concurrency, seconds, warmup)
    total, secs, ok, errors, p50, p99 = _wrk_figures(out)
    return Run(ok, ok * items_per_request, total, errors, secs, p50, p99, "wrk")


# One Lua state per wrk thread: a half's response queues its transaction id, and the
# next request any connection makes ends the oldest queued transaction before a new
# half is sent. So about half the requests in flight are ends, as with N clients each
# doing half → end; the transactions/s are the successful ends.
_PAIRS_LUA = """
local hdr = {["Content-Type"] = "application/json"}
local half = wrk.format("POST", "%(half_path)s", hdr, %(half_body)s)
local end_body = %(end_body)s
local queued, head, tail = {}, 1, 0
ends, halves, failures = 0, 0, 0
local threads = {}

function setup(thread) table.insert(threads, thread) end

function request()
  if head <= tail then
    local id = queued[head]
    queued[head] = nil
    head = head + 1
    return wrk.format("POST", "%(half_path)s/" .. id .. "/end", hdr, end_body)
  end
  return half
end

function response(status, headers, body)
  if status ~= 200 then failures = failures + 1 return end
  if body:find('"state":', 1, true) then ends = ends + 1 return end
  local id = body:match('"transaction_id":"([^"]+)"')
  if id then tail = tail + 1; queued[tail] = id; halves = halves + 1 else failures = failures + 1 end
end

function done(summary, latency, requests)
  local e, h, f = 0, 0, 0
  for _, t in ipairs(threads) do e = e + t:get("ends"); h = h + t:get("halves"); f = f + t:get("failures") end
  io.write(string.format("PAIRS ends=%%d halves=%%d failures=%%d\\n", e, h, f))
end
"""


def wrk_pairs(broker_url: str, half_body: bytes, end_body: bytes, concurrency: int, seconds: float, *,
              warmup: float = 0.0) -> Run:
    """Half + end(commit) pairs driven by wrk: ``concurrency`` requests in flight, transactions/s = ends/s.

    Latencies are per request (a pair is two of them), as wrk measures them.
    """
    script = _PAIRS_LUA % {
        "half_path": "/v1/transactions",
        "half_body": _lua_long_string(half_body.decode()),
        "end_body": _lua_long_string(end_body.decode()),
    }
    out = _wrk_script(broker_url + "/v1/transactions", script, concurrency, seconds, warmup)
    total, secs, _ok, errors, p50, p99 = _wrk_figures(out)
    m = re.search(r"PAIRS ends=(\d+) halves=(\d+) failures=(\d+)", out)
    if not m:
        raise RuntimeError(f"wrk pairs script printed no summary: {out[-500:]}")
    ends, failures = int(m.group(1)), int(m.group(3))
    return Run(ends, ends, total, errors + failures, secs, p50, p99, "wrk",
               extra={"latency": "per request (a pair is two requests)", "halves": int(m.group(2))})


def _wrk_script(url: str, script_text: str, concurrency: int, seconds: float, warmup: float) -> str:
    with tempfile.TemporaryDirectory(prefix="halfmq-wrk-") as tmp:
        script = Path(tmp) / "load.lua"
        script.write_text(script_text)
        if warmup > 0:
            _wrk(url, script, concurrency, max(1, round(warmup)))
        return _wrk(url, script, concurrency, max(1, round(seconds)))


def _wrk_figures(out: str) -> tuple[int, float, int, int, float, float]:
    """(requests, seconds, 2xx, errors, p50 ms, p99 ms) from wrk's --latency report."""
    total = int(re.search(r"(\d+) requests in ([\d.]+)(\w+)", out).group(1))
    dur_m = re.search(r"requests in ([\d.]+)(us|ms|s|m)", out)
    secs = _wrk_ms(dur_m.group(1) + dur_m.group(2)) / 1000
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = (int(non2xx.group(1)) if non2xx else 0) + (sum(int(g) for g in sock.groups()) if sock else 0)
    ok = total - (int(non2xx.group(1)) if non2xx else 0)
    p50 = _wrk_ms(re.search(r"\s50%\s+(\S+)", out).group(1))
    p99 = _wrk_ms(re.search(r"\s99%\s+(\S+)", out).group(1))
    return total, secs, ok, errors, p50, p99


def _wrk(url: str, script: Path, concurrency: int, seconds: int) -> str:
    proc = subprocess.run(
        ["wrk", "-t1", f"-c{concurrency}", f"-d{seconds}s", "--latency", "-s", str(script), url],
        capture_output=True, text=True, timeout=seconds + 60,
    )
    if proc.returncode != 0 or "requests in" not in proc.stdout:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {proc.stderr[-500:] or proc.stdout[-500:]}")
    return proc.stdout
