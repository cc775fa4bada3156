"""`halfmq aggregate`: the Spark job (per-user / per-day credit totals and the order ↔ credit reconciliation)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def cmd_aggregate(args: argparse.Namespace) -> int:
    """Exit code 0 when the reconciliation is clean, 1 when it found problems, 2 on errors."""
    from pydantic import ValidationError

    from halfmq.jobs import credit_aggregate as job

    job.configure_logging()
    try:
        settings = job.settings_from_args(args)
    except ValidationError as exc:
        print(f"halfmq aggregate: bad settings: {exc}", file=sys.stderr)
        return job.EXIT_ERROR
    if not args.every:
        return job.execute(settings)
    heartbeat = Path(settings.output_dir) / "heartbeat"
    while True:  # the compose service: aggregate on a schedule; healthy while runs keep finishing
        code = job.execute(settings)
        if code != job.EXIT_ERROR:
            heartbeat.parent.mkdir(parents=True, exist_ok=True)
            heartbeat.touch()
        time.sleep(args.every)


def add_parser(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "aggregate",
        help="run the Spark job: credit totals per user and per day, order ↔ credit reconciliation",
        description="Reads the credit ledger with Spark's JDBC source, publishes the summary the credit service "
                    "serves, writes Parquet and a reconciliation report. Exit code: 0 clean, 1 problems found, 2 error.",
    )
    parser.add_argument("--master", help="Spark master, e.g. local[2] or spark://host:7077 (default SPARK_MASTER or local[*])")
    parser.add_argument("--credit-db", help="credit database SQLAlchemy URL (default CREDIT_DATABASE_URL or sqlite:///./data/credit.db)")
    parser.add_argument("--order-db", help="order database SQLAlchemy URL (default ORDER_DATABASE_URL or sqlite:///./data/order.db)")
    parser.add_argument("--output-dir", type=Path, help="Parquet and report directory (default AGGREGATE_OUTPUT_DIR or ./data/spark)")
    parser.add_argument("--partitions", type=int, help="JDBC read partitions of the ledger (default AGGREGATE_PARTITIONS or 4)")
    parser.add_argument("--every", type=float, help="run again every this many seconds, forever (the compose service)")
    parser.set_defaults(func=cmd_aggregate)
