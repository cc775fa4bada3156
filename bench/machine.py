"""What a result was measured on: machine, software versions, the commit.

Benchmarks on shared machines are only comparable within one session on one
machine, so every result file says which one it was.
"""

from __future__ import annotations

import compileall
import importlib.util
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


def compile_bytecode() -> int:
    """Compile the installed halfmq's bytecode (as pip does at install) and return how many folders were compiled.

    A broker started from a checkout under ``PYTHONDONTWRITEBYTECODE=1`` (this workplace's shells set it) recompiles
    every module changed since its last ``.pyc`` at every start: ~30 modules after a day's edits, 0.4-1 s of a restart
    that a deployed broker never pays. Timed starts (``longlife``, ``recovery``) measure the broker, not the compiler.
    """
    folders = {loc for name in ("halfmq", "halfmq.broker", "halfmq.cli", "halfmq.services", "halfmq.jobs", "halfmq.bench")
               if (spec := importlib.util.find_spec(name)) is not None
               for loc in spec.submodule_search_locations or []}
    for folder in sorted(folders):
        compileall.compile_dir(folder, quiet=2)
    return len(folders)


def java_version() -> str | None:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[0] if lines else None
