"""What a result was measured on: machine, software versions, the commit.

Benchmarks on shared machines are only comparable within one session on one
machine, so every result file says which one it was.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from .load import wrk_version

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("halfmq", "fastapi", "starlette", "pydantic", "granian", "uvicorn", "uvloop", "httptools", "aiohttp", "httpx",
            "orjson", "sqlalchemy", "pyspark")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def machine() -> dict:
    mem = memory_bytes()
    return {
        "cpu_model": cpu_model(),
        "cores": os.cpu_count(),
        "affinity_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory_gib": round(mem / 2**30, 1) if mem else None,
        "kernel": platform.release(),
        "os": platform.platform(terse=True),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "hostname": platform.node(),
    }


def versions() -> dict:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["wrk"] = wrk_version()
    out["git_commit"] = git_commit()
    return out


def git_commit() -> str | None:
    """HEAD of the checkout (read-only: no index refresh, no locks)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5,
                             env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def java_version() -> str | None:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[0] if lines else None
