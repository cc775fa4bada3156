"""`spark`: the aggregation + reconciliation job on 1,000,000 generated credits (quick: 10,000).

Setup, not timed: the credit and order SQLite databases are migrated and
filled by ``halfmq.jobs.generate_credits`` (every order credited once, balances
right). Each run then starts ``python -m halfmq.jobs.credit_aggregate`` as a fresh
process - so the JVM start is inside the figure - and times it from
``Popen`` to exit: read the ledger over JDBC, aggregate per user and day,
publish the summary, write Parquet, reconcile. The job's own stage timings
(its "done in" log line) are kept per run. A run whose reconciliation is not
clean, or that fails, fails the scenario.

Reported as "unavailable" when the job, PySpark, Java or the JDBC driver is
not there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from typing import Any

from ..context import Context
from ..machine import java_version
from ..results import scenario_ok, scenario_unavailable, timed_case
from ..servers import ROOT

DONE = re.compile(r"done in ([\d.]+)s: (.*)$", re.MULTILINE)


def baselines(driver: str) -> list[str]:
    return []


def _stage_timings(log_text: str) -> dict[str, float]:
    found = DONE.findall(log_text)
    if not found:
        return {}
    total, stages = found[-1]
    out = {"job_total_s": float(total)}
    for part in stages.split(", "):
        m = re.match(r"(.+) ([\d.]+)s$", part.strip())
        if m:
            out[m.group(1).replace(" ", "_").replace("-", "_") + "_s"] = float(m.group(2))
    return out


def _unavailable_reason() -> str | None:
    try:
        from halfmq.jobs.credit_aggregate import AggregateError, AggregateSettings, jdbc_classpath
        from halfmq.jobs.generate_credits import generate, migrate  # noqa: F401
    except ImportError as exc:
        return f"the Spark job is not importable: {exc}"
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed"
    if shutil.which("java") is None:
        return "java is not installed"
    try:
        jdbc_classpath(AggregateSettings(), {"sqlite"})
    except AggregateError as exc:
        return f"no SQLite JDBC driver: {exc}"
    except Exception as exc:  # noqa: BLE001 - any other refusal to build a classpath is the same answer
        return f"cannot build the JDBC classpath: {type(exc).__name__}: {exc}"
    return None


def run(ctx: Context) -> dict[str, Any]:
    reason = _unavailable_reason()
    if reason:
        ctx.note(f"spark unavailable: {reason}")
        return scenario_unavailable(reason)
    from halfmq.jobs.generate_credits import generate, migrate

    s = ctx.settings
    data = ctx.dir("spark")
    credit_url, order_url = f"sqlite:///{data / 'credit.db'}", f"sqlite:///{data / 'order.db'}"
    ctx.note(f"spark: migrating and generating {s.spark_rows:,} credits")
    t = time.perf_counter()
    migrate("credit", credit_url)
    migrate("order", order_url)
    generated = generate(credit_url, order_url, s.spark_rows)
    setup_s = time.perf_counter() - t
    env = {**os.environ, "CREDIT_DATABASE_URL": credit_url, "ORDER_DATABASE_URL": order_url,
           "AGGREGATE_OUTPUT_DIR": str(data / "out")}
    cases = ctx.cases()
    runs: list[dict[str, Any]] = []
    for i in range(s.runs):
        log_path = ctx.logs / f"spark-run-{i + 1}.log"
        with open(log_path, "wb") as log:
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, "-m", "halfmq.jobs.credit_aggregate"], cwd=ROOT, env=env,
                                  stdout=log, stderr=subprocess.STDOUT, timeout=s.spark_timeout)
            wall = time.perf_counter() - t0
        text = log_path.read_text(errors="replace")
        if proc.returncode != 0:
            raise RuntimeError(f"credit_aggregate exited {proc.returncode} (1 = reconciliation found problems):\n"
                               + "\n".join(text.splitlines()[-30:]))
        report = json.loads((data / "out" / "reconciliation.json").read_text())
        run = {"seconds": round(wall, 3), **_stage_timings(text), "credits": report.get("credits"),
               "orders_committed": report.get("orders_committed")}
        runs.append(run)
        ctx.note(f"spark run {i + 1}/{s.runs}: {wall:.2f} s wall (job says {run.get('job_total_s', '?')} s)")
    cases["aggregate"] = timed_case(runs, what=f"credit_aggregate on {s.spark_rows:,} credits, fresh process (JVM start included)",
                                    rows=s.spark_rows)
    return scenario_ok(cases, rows=s.spark_rows, users=generated.users, generate_seconds=round(setup_s, 1),
                       spark_master=os.environ.get("SPARK_MASTER", "local[*]"), java=java_version())
