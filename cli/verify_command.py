"""``halfmq broker --verify``: check a data directory through and through, then exit 0 (clean) or 3 (damaged)."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn

from halfmq.broker.config import BrokerSettings
from halfmq.broker.store.data_lock import DataDirLocked
from halfmq.broker.store.verify import verify_store

EXIT_DAMAGED = 3  # the same code as a broker refusing to start on corruption


def run_verify(settings: BrokerSettings) -> int:
    out = Console(file=sys.stdout, highlight=False, soft_wrap=True)
    err = Console(file=sys.stderr)
    if not settings.data_dir.is_dir():
        err.print(f"cannot verify: no data directory at {settings.data_dir}", markup=False)
        return 1
    with Progress("verifying commit log", BarColumn(), DownloadColumn(), TimeRemainingColumn(), console=err, transient=True) as bar:
        task = bar.add_task("log", total=None)
        try:
            report = verify_store(settings.data_dir, settings.consume_queue_entries,
                                  lambda done, total: bar.update(task, completed=done, total=total))
        except DataDirLocked as exc:
            err.print(f"cannot verify: {exc}")
            return 2
    for finding in report.findings:
        out.print(str(finding), markup=False)
    damaged = sum(not f.repaired_at_start for f in report.findings)
    out.print(f"{settings.data_dir}: {report.records} records and {report.entries} consume-queue entries checked; "
              f"{damaged} damaged, {len(report.findings) - damaged} repaired at the next start", markup=False)
    return EXIT_DAMAGED if report.damaged else 0
