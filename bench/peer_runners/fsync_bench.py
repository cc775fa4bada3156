#!/usr/bin/env python3
# Source: /work/shared/bench/peers/fsync_bench.py (copied into the project for issue 18; run as a file by the peers' venv python).
"""Disk durability ceiling: fsync'd appends of 256-byte records.

Modes: one fsync per record, group commit (fsync every 64 records), and
fdatasync per record for contrast. Bounded by count and time.
Usage: python fsync_bench.py [--dir /tmp] [--seconds 5] [--reps 3]
Prints one JSON line.
"""
import argparse
import json
import os
import statistics
import time

REC = b"x" * 255 + b"\n"  # 256 bytes


def run(path, group, seconds, max_records, sync=os.fsync):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        n = 0
        t0 = time.perf_counter()
        deadline = t0 + seconds
        while n < max_records:
            os.write(fd, REC)
            n += 1
            if n % group == 0:
                sync(fd)
                if time.perf_counter() >= deadline:
                    break
        sync(fd)
        dt = time.perf_counter() - t0
    finally:
        os.close(fd)
        os.unlink(path)
    return n / dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    path = os.path.join(a.dir, f"fsync_bench_{os.getpid()}.log")
    out = {"bench": "fsync_append_256B", "dir": a.dir, "seconds_per_run": a.seconds}
    for name, group, sync in [("fsync_each", 1, os.fsync),
                              ("fdatasync_each", 1, os.fdatasync),
                              ("fsync_group64", 64, os.fsync)]:
        vals = [run(path, group, a.seconds, 5_000_000, sync) for _ in range(a.reps)]
        out[name] = {"median_rps": round(statistics.median(vals)),
                     "min": round(min(vals)), "max": round(max(vals)),
                     "runs": [round(v) for v in vals]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
