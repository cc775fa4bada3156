"""The repeat loop: runs of several cases taken in turn, each case's first run after its warm-up."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from halfmq.bench.context import Context
from halfmq.bench.load import Run
from halfmq.bench.settings import BenchSettings


def _run(items: int) -> Run:
    return Run(items, items, items, 0, 1.0, 1.0, 2.0, "test")


def test_cases_are_measured_in_turn_and_only_their_first_run_is_warmed_up(tmp_path: Path) -> None:
    ctx = Context(BenchSettings(runs=3, warmup=0.5), Console(quiet=True), root=tmp_path)
    calls: list[tuple[str, int, float]] = []

    def case(name: str, items: int) -> Callable[[int, float], Run]:
        def once(i: int, warmup: float) -> Run:
            calls.append((name, i, warmup))
            return _run(items)
        return once

    runs = ctx.alternate({"a": case("a", 10), "b": case("b", 20)})
    assert calls == [("a", 0, 0.5), ("b", 0, 0.5), ("a", 1, 0.0), ("b", 1, 0.0), ("a", 2, 0.0), ("b", 2, 0.0)]
    assert [r.items for r in runs["a"]] == [10, 10, 10] and [r.items for r in runs["b"]] == [20, 20, 20]
    assert [r.items for r in ctx.repeat("c", case("c", 5))] == [5, 5, 5]


def test_a_case_asked_for_at_least_two_runs_gets_two_even_when_the_settings_say_one(tmp_path: Path) -> None:
    ctx = Context(BenchSettings(runs=1, warmup=0.0), Console(quiet=True), root=tmp_path)
    runs = ctx.alternate({"a": lambda _i, _w: _run(1), "b": lambda _i, _w: _run(2)}, minimum=2)
    assert [r.items for r in runs["a"]] == [1, 1] and [r.items for r in runs["b"]] == [2, 2]
