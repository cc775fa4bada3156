"""One run of the job: the stages of ``stages`` in order, each timed and logged.

:func:`run` also releases the session it started, the cached DataFrames and the engines, whatever happens.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .databases import create_engine_for
from .jdbc import jdbc_classpath, to_jdbc
from .publishing import new_run_id, publish_summary
from .reconciliation import Reconciliation, TopicAgreement
from .settings import EXIT_CLEAN, EXIT_PROBLEMS, AggregateSettings, log
from .spark_io import build_spark, ensure_jdbc_drivers
from .stages import agree_with_topic, check_sources, read_ledger, reconcile_and_report, summarize, write_parquet

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass
class AggregateResult:
    run_id: str
    computed_at: datetime
    users: list[dict[str, Any]]  # summary rows as published (datetimes UTC-aware)
    days: list[dict[str, Any]]
    reconciliation: Reconciliation
    report: dict[str, Any]  # DESIGN section 9's shape
    credits: int
    points: int
    parquet_dir: Path
    report_path: Path
    removed_runs: list[str]
    timings: dict[str, float]
    topic: TopicAgreement | None = None  # with AGGREGATE_FROM_TOPIC: the order topic against the ledger

    @property
    def clean(self) -> bool:
        return self.reconciliation.clean and (self.topic is None or self.topic.agrees)

    @property
    def exit_code(self) -> int:
        return EXIT_CLEAN if self.clean else EXIT_PROBLEMS


class _Stages:
    """Logs each stage as it starts and ends, with its wall time."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self.started = time.perf_counter()

    @contextmanager
    def __call__(self, name: str) -> Iterator[dict[str, Any]]:
        notes: dict[str, Any] = {}
        log.info("▶ %s …", name)
        t0 = time.perf_counter()
        yield notes
        self.timings[name] = round(time.perf_counter() - t0, 3)
        detail = ", ".join(f"{k}={v:,}" if isinstance(v, int) else f"{k}={v}" for k, v in notes.items())
        log.info("✔ %s in %.2fs%s", name, self.timings[name], f" ({detail})" if detail else "")

    def total(self) -> float:
        self.timings["total"] = round(time.perf_counter() - self.started, 3)
        return self.timings["total"]


def run(settings: AggregateSettings, spark: SparkSession | None = None) -> AggregateResult:
    """Read, aggregate, publish, write Parquet, reconcile. I/O only: the logic is in the pure functions.

    Pass ``spark`` to reuse a session (it must have been built with the JDBC drivers, see :func:`build_spark`);
    otherwise one is started and stopped here.
    """
    stage = _Stages()
    credit_db, order_db = to_jdbc(settings.credit_database_url), to_jdbc(settings.order_database_url)
    dialects = {credit_db.dialect, order_db.dialect}
    output_dir = Path(settings.output_dir).resolve()
    with stage("preflight") as notes:
        bounds = check_sources(settings, spark, credit_db, order_db, notes)
    own_spark = spark is None
    if spark is None:
        with stage("spark start") as notes:
            spark = build_spark(settings, dialects=dialects)
            notes.update(master=spark.sparkContext.master, version=spark.version)
    else:
        ensure_jdbc_drivers(spark, dialects, jdbc_classpath(settings, dialects, missing_ok=True))
    cached: list[DataFrame] = []
    credit_engine = create_engine_for(settings.credit_database_url, write=True)
    readers = create_engine_for(settings.credit_database_url), create_engine_for(settings.order_database_url)
    try:
        with stage("read") as notes:
            credits, buckets = read_ledger(spark, credit_db, bounds, settings.partitions, cached, notes)
        with stage("aggregate") as notes:
            summary = summarize(buckets, cached, notes)
        computed_at = datetime.now(UTC)
        run_id = new_run_id(computed_at)
        with stage("write-back") as notes:
            removed = publish_summary(credit_engine, run_id, computed_at, summary.users, summary.days, settings.keep_runs)
            notes.update(run_id=run_id, removed_runs=len(removed))
        with stage("parquet") as notes:
            run_dir = write_parquet(summary, output_dir, run_id, settings.keep_runs, notes)
        topic = None
        if settings.from_topic:
            with stage("topic") as notes:
                topic = agree_with_topic(spark, settings, credits, notes)
        with stage("reconcile") as notes:
            rec, report = reconcile_and_report(spark, credit_db, order_db, credits, summary, readers,
                                               [output_dir / "reconciliation.json", run_dir / "reconciliation.json"], notes,
                                               extra={} if topic is None else {"topic": topic.as_dict()})
    finally:
        _release(cached, (credit_engine, *readers), spark if own_spark else None)
    log.info("done in %.2fs: %s", stage.total(), ", ".join(f"{k} {v:.2f}s" for k, v in stage.timings.items() if k != "total"))
    return AggregateResult(run_id=run_id, computed_at=computed_at, users=summary.users, days=summary.days, reconciliation=rec,
                           report=report, credits=summary.credits, points=summary.points, parquet_dir=run_dir,
                           report_path=output_dir / "reconciliation.json", removed_runs=removed, timings=stage.timings, topic=topic)


def _release(cached: list[DataFrame], engines: tuple[Any, ...], own_spark: SparkSession | None) -> None:
    for df in cached:
        try:
            df.unpersist()
        except Exception:  # noqa: BLE001 - the session may be gone already
            pass
    for engine in engines:
        engine.dispose()
    if own_spark is not None:
        own_spark.stop()
