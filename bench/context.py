"""What every scenario gets: the settings, a private temp dir, a console, and the repeat loop.

Scenarios only describe what to measure; how many times, with what warm-up
and with what progress output is decided here once.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console

from .load import Run
from .settings import BenchSettings


@dataclass
class Context:
    settings: BenchSettings
    console: Console
    root: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="halfmq-bench-")))
    partial: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def create(cls, settings: BenchSettings, console: Console) -> Context:
        parent = settings.workdir
        if parent is not None:
            parent.mkdir(parents=True, exist_ok=True)
        return cls(settings, console, Path(tempfile.mkdtemp(prefix="halfmq-bench-", dir=parent)))

    def dir(self, *parts: str) -> Path:
        path = self.root.joinpath(*parts)
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def logs(self) -> Path:
        return self.dir("logs")

    def cases(self) -> dict[str, dict]:
        """A fresh dict for a scenario's cases; kept here so a scenario that fails midway still reports what it measured."""
        self.partial = {}
        return self.partial

    def note(self, text: str) -> None:
        self.console.print(f"[dim]  {text}[/dim]", highlight=False)

    def repeat(self, label: str, once: Callable[[int, float], Run]) -> list[Run]:
        """``runs`` measured runs of ``once(index, warmup)``; only the first one is preceded by a warm-up."""
        return self.alternate({label: once})[label]

    def alternate(self, cases: dict[str, Callable[[int, float], Run]], minimum: int = 1) -> dict[str, list[Run]]:
        """``runs`` (at least ``minimum``) measured runs of each case, taken in turn (a, b, a, b, …) so that a load
        drifting on a shared machine weighs on each alike; each case's first run is preceded by its warm-up."""
        runs: dict[str, list[Run]] = {label: [] for label in cases}
        total = max(minimum, self.settings.runs)
        for i in range(total):
            for label, once in cases.items():
                run = once(i, self.settings.warmup if i == 0 else 0.0)
                self._noted(label, i, run, total)
                runs[label].append(run)
        return runs

    def _noted(self, label: str, i: int, run: Run, total: int) -> None:
        rate = f"{run.items_per_s:,.0f}/s"
        lat = f"p50 {run.p50_ms:.2f} ms, p99 {run.p99_ms:.2f} ms" if run.p50_ms is not None and run.p99_ms is not None else ""
        err = f", [red]{run.errors} errors[/red]" if run.errors else ""
        self.note(f"{label} run {i + 1}/{total}: {rate} {lat}{err}")

    def cleanup(self, keep: bool = False) -> None:
        if not keep:
            shutil.rmtree(self.root, ignore_errors=True)
