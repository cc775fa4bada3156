#!/usr/bin/env python3
# Source: /work/shared/bench/peers/http_append_bench.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""Anchor: FastAPI POST that appends the 256-byte body to a log and fsyncs inline, 1 uvicorn worker,
driven by wrk -t1 -c64 (and -c1) for --seconds, --reps times. One JSON line.
Usage: /tmp/halfmq-peers/bin/python http_append_bench.py [--seconds 8] [--reps 3]"""
import argparse
import json
import os

from http_bench import start_server, stop_server, summarize, wrk_load

ap = argparse.ArgumentParser()
ap.add_argument("--seconds", type=float, default=8)
ap.add_argument("--reps", type=int, default=3)
ap.add_argument("--port", type=int, default=18083)
a = ap.parse_args()
log = "/tmp/http_append_bench.log"
os.environ["BENCH_APPEND_LOG"] = log
p = start_server(a.port, 1)
url = f"http://127.0.0.1:{a.port}/append_fsync"
try:
    out = {"bench": "fastapi_append_fsync_inline", "workers": 1,
           "wrk_t1_c64": summarize([wrk_load(url, 64, a.seconds) for _ in range(a.reps)]),
           "wrk_t1_c1": summarize([wrk_load(url, 1, a.seconds) for _ in range(a.reps)])}
finally:
    stop_server(p)
    if os.path.exists(log):
        os.unlink(log)
print(json.dumps(out))
