"""The job's command line: ``halfmq aggregate``, ``python -m halfmq.jobs.credit_aggregate``, spark-submit.

Prints the reconciliation and turns the outcome into the exit code: 0 clean, 1 problems found, 2 error.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from .jdbc import AggregateError
from .run import AggregateResult, run
from .settings import EXIT_ERROR, AggregateSettings, log

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DESCRIPTION = "The Spark job: per-user and per-day credit totals, and order ↔ credit reconciliation (DESIGN section 9)."


def print_report(result: AggregateResult, console=None, limit: int = 20) -> None:
    """The reconciliation as a rich table, then the report's JSON, on stdout."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    rec = result.reconciliation
    table = Table(title=f"credit aggregation {result.run_id}", show_header=True)
    table.add_column("check")
    table.add_column("count", justify="right")
    table.add_column("detail")

    def ids(values: list[Any]) -> str:
        shown = ", ".join(str(v) for v in values[:limit])
        return shown + (f" … (+{len(values) - limit})" if len(values) > limit else "")

    ok, bad = "[green]ok[/]", "[red]{}[/]"
    table.add_row("committed orders", f"{rec.orders_committed:,}", "")
    table.add_row("credits", f"{rec.credits:,}", f"{result.points:,} points, {len(result.users):,} users, {len(result.days):,} days")
    table.add_row("missing credits", bad.format(len(rec.missing_credits)) if rec.missing_credits else ok, ids(rec.missing_credits))
    table.add_row("orphan credits", bad.format(len(rec.orphan_credits)) if rec.orphan_credits else ok, ids(rec.orphan_credits))
    table.add_row("balance mismatches", bad.format(len(rec.balance_mismatches)) if rec.balance_mismatches else ok,
                  ids([f"{m['user_id']} (balance {m['balance']}, ledger {m['ledger_points']})" for m in rec.balance_mismatches]))
    console.print(table)
    timings = ", ".join(f"{k} {v:.2f}s" for k, v in result.timings.items())
    console.print(f"summary published as run {result.run_id}; Parquet in {result.parquet_dir}; report {result.report_path}")
    console.print(f"timings: {timings}")
    console.print_json(json.dumps(result.report))


def _error_line(exc: BaseException) -> str:
    """One readable line: for a Java error (JDBC, Spark internals) the Java exception, not py4j's wrapper."""
    java = getattr(exc, "java_exception", None)
    if java is not None:
        try:
            return str(java.toString()).strip().splitlines()[0]
        except Exception:  # noqa: BLE001 - the JVM may be gone
            pass
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


def execute(settings: AggregateSettings, spark: SparkSession | None = None, console=None) -> int:
    """Run, print, and turn the outcome into an exit code (0 clean, 1 problems found, 2 error)."""
    from rich.console import Console

    console = console or Console()
    try:
        result = run(settings, spark)
    except AggregateError as exc:
        Console(stderr=True).print(f"[red]aggregate failed:[/] {exc}", highlight=False, soft_wrap=True)
        return EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - Spark, JDBC and database errors all end here
        traceback.print_exc()
        first = _error_line(exc)
        Console(stderr=True).print(f"[red]aggregate failed:[/] {type(exc).__name__}: {first[:500]}", highlight=False, soft_wrap=True)
        return EXIT_ERROR
    print_report(result, console)
    return result.exit_code


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", help="Spark master (default SPARK_MASTER or local[*])")
    parser.add_argument("--credit-db", help="credit database SQLAlchemy URL (default CREDIT_DATABASE_URL)")
    parser.add_argument("--order-db", help="order database SQLAlchemy URL (default ORDER_DATABASE_URL)")
    parser.add_argument("--output-dir", help="Parquet and report directory (default AGGREGATE_OUTPUT_DIR or ./data/spark)")
    parser.add_argument("--partitions", type=int, help="JDBC read and shuffle partitions (default AGGREGATE_PARTITIONS or 4)")
    parser.add_argument("--from-topic", action="store_true", default=None,
                        help="also aggregate straight from the order topic and check it agrees with the ledger (AGGREGATE_FROM_TOPIC)")


def settings_from_args(args: argparse.Namespace) -> AggregateSettings:
    overrides = {"spark_master": args.master, "credit_database_url": args.credit_db, "order_database_url": args.order_db,
                 "output_dir": None if args.output_dir is None else str(args.output_dir),
                 "partitions": getattr(args, "partitions", None), "from_topic": getattr(args, "from_topic", None)}
    return AggregateSettings(**{k: v for k, v in overrides.items() if v is not None})


def configure_logging() -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)-7s %(name)s: %(message)s", stream=sys.stderr)
    log.setLevel(logging.INFO)
    for chatty in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(chatty).setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="credit_aggregate", description=DESCRIPTION)
    add_arguments(parser)
    args = parser.parse_args(argv)
    configure_logging()
    try:
        settings = settings_from_args(args)
    except ValidationError as exc:
        print(f"aggregate: bad settings: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return execute(settings)
